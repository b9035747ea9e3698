"""Index of the generated launchers: imports `helion_kernels._generated.*` and merges their VARIANTS."""
from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType


class VariantRegistry:
    """op name -> variant id -> launcher, plus per-op metadata the generator recorded."""

    def __init__(self, package: str = "helion_kernels._generated"):
        self._package = package
        self._launchers = None
        self._op_info = {}

    def _load(self):
        launchers = {}
        try:
            package = importlib.import_module(self._package)
        except ImportError:
            self._launchers = {}
            return
        for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"{self._package}.{module_info.name}")
            for op, variants in getattr(module, "VARIANTS", {}).items():
                launchers.setdefault(op, {}).update(variants)
            self._op_info.update(getattr(module, "OP_INFO", {}))
        self._launchers = launchers

    def launchers(self, op: str):
        if self._launchers is None:
            self._load()
        return MappingProxyType(self._launchers.get(op, {}))

    def op_info(self, op: str) -> dict:
        if self._launchers is None:
            self._load()
        return self._op_info.get(op, {})

    def ops(self) -> list:
        if self._launchers is None:
            self._load()
        return sorted(self._launchers)
