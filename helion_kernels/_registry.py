"""Index of the generated launchers: `helion_kernels._generated` names each op's family module
(`FAMILIES`), and a family is imported on the first question about one of its ops, so that a call
of one op does not define the Triton kernels of every other (`triton.jit` reads and hashes each
kernel's source when it is defined)."""
from __future__ import annotations

import importlib
from types import MappingProxyType


class VariantRegistry:
    """op name -> variant id -> launcher, plus per-op metadata the generator recorded."""

    def __init__(self, package: str = "helion_kernels._generated"):
        self._package = package
        self._families = None  # op -> family module name
        self._modules = {}

    def _index(self) -> dict:
        if self._families is None:
            try:
                package = importlib.import_module(self._package)
            except ImportError:
                package = None
            self._families = dict(getattr(package, "FAMILIES", {}))
        return self._families

    def _module(self, op: str):
        family = self._index().get(op)
        if family is None:
            return None
        module = self._modules.get(family)
        if module is None:
            module = self._modules[family] = importlib.import_module(f"{self._package}.{family}")
        return module

    def launchers(self, op: str):
        module = self._module(op)
        return MappingProxyType(module.VARIANTS.get(op, {}) if module is not None else {})

    def op_info(self, op: str) -> dict:
        module = self._module(op)
        return module.OP_INFO.get(op, {}) if module is not None else {}

    def ops(self) -> list:
        return sorted(self._index())
