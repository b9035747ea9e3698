"""`helion.kernel`: the decorator, Kernel (a function plus settings) and BoundKernel (a kernel bound to
one argument specialization), with per-config compilation and caching."""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import threading
import types
import warnings
from typing import Any, Callable

import torch

from . import exc, nested
from .config import Config
from .config_spec import ConfigSpec
from .host import parse_kernel
from .inline import callable_json, callable_key
from .module import GeneratedCode, generated_code
from .session import CompileSession

IGNORED_HELION_SETTINGS = {
    "autotune_effort", "autotune_log_level", "autotune_compile_timeout", "autotune_precompile",
    "autotune_random_seed", "autotune_accuracy_check", "autotune_rebenchmark_threshold",
    "autotune_progress_bar", "autotune_max_generations", "autotune_config_overrides",
    "autotune_baseline_fn", "autotune_baseline_atol", "autotune_baseline_rtol", "autotuner_fn",
    "ignore_warnings", "print_output_code", "force_autotune", "use_default_config", "dot_precision",
    "index_dtype", "allow_warp_specialize", "debug_dtype", "print_repro", "ref_mode", "autotune_cache",
}
LOOP_DISCOVERY_CHUNK = 1
_MODULE_LOCK = threading.Lock()


def kernel(fn: Callable | None = None, *, config: Config | dict | None = None, configs: list | None = None,
           static_shapes: bool = True, **settings: Any) -> Any:
    """Decorator: `@helion.kernel`, `@helion.kernel()`, or `@helion.kernel(config=..., configs=..., static_shapes=...)`."""
    ignored = sorted(settings)
    unknown = [k for k in ignored if k not in IGNORED_HELION_SETTINGS]
    if ignored:
        warnings.warn(f"helion.kernel: ignoring setting(s) {ignored}" + (f" (not Helion settings we know: {unknown})" if unknown else ""), stacklevel=2)

    def wrap(f: Callable) -> Kernel:
        return Kernel(f, config=config, configs=configs, static_shapes=static_shapes)

    return wrap(fn) if fn is not None else wrap


class Kernel:
    def __init__(self, fn: Callable, *, config: Any = None, configs: list | None = None, static_shapes: bool = True):
        self.fn = fn
        self.name = fn.__name__
        self.config = Config(config) if config is not None else None
        self.configs = [Config(c) for c in (configs or [])]
        self.static_shapes = static_shapes
        self.signature = inspect.signature(fn)
        self._parsed = None
        self._bound: dict[Any, BoundKernel] = {}
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__wrapped__ = fn

    @property
    def parsed(self):
        if self._parsed is None:
            self._parsed = parse_kernel(self.fn)
        return self._parsed

    def normalize_args(self, args: tuple, kwargs: dict) -> dict:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.name}(): {err}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def tensor_key(self, value: torch.Tensor) -> tuple:
        if nested.is_nested(value):
            return nested.tensor_parts_key(value, self.tensor_key)
        item: tuple = ("tensor", str(value.dtype), value.dim(), value.device.type)
        if self.static_shapes:
            return item + (tuple(value.shape), tuple(value.stride()))
        return item + (tuple(size_bucket(s) for s in value.shape),)

    def specialization_key(self, arguments: dict) -> tuple:
        """A callable argument (inlined where device code calls it) keys by its code object and what
        its closure and defaults hold (inline.callable_key): another function compiles another
        kernel, another closure of the same code runs the same one, which reads the closure's
        tensors and numbers at call time."""
        key = []
        for name, value in arguments.items():
            if isinstance(value, torch.Tensor):
                key.append(self.tensor_key(value))
            elif isinstance(value, types.FunctionType):
                key.append(("callable",) + callable_key(value, self.tensor_key))
            elif isinstance(value, bool) or value is None or name in self.parsed.constexpr_params:
                key.append(("const", repr(value)))
            elif isinstance(value, (int, float)):
                key.append((type(value).__name__,))
            elif isinstance(value, (torch.dtype, str)):
                key.append(("const", str(value)))
            else:
                key.append(("const", repr(value)))
        return tuple(key)

    def bind(self, args: tuple | list, kwargs: dict | None = None) -> "BoundKernel":
        arguments = self.normalize_args(tuple(args), kwargs or {})
        key = self.specialization_key(arguments)
        candidates = self._bound.get(key)
        if candidates is None:
            bound = BoundKernel(self, arguments)
            self._bound[key] = bound
            return bound
        if not candidates.specialized_values:
            return candidates
        values = candidates.specialized_values_for(arguments)
        for bound in [candidates] + candidates.siblings:
            if bound.specialized_values == values:
                return bound
        bound = BoundKernel(self, arguments)
        candidates.siblings.append(bound)
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.bind(args, kwargs)(*args, **kwargs)

    def reset(self) -> None:
        self._bound.clear()


class BoundKernel:
    def __init__(self, kernel: Kernel, arguments: dict):
        self.kernel = kernel
        self.arguments = arguments
        self.siblings: list[BoundKernel] = []
        self._compiled: dict[str, Callable] = {}
        self._code: dict[str, str] = {}
        self.found = self._discover()
        self.config_spec = ConfigSpec(self.found, self._discover)
        self.specialized_values = tuple(self.found.specialized) + tuple(self.found.guards)

    def _session(self, config: Config, force_persistent: set, discovering: bool = False) -> CompileSession:
        session = CompileSession(self.kernel.parsed, self.arguments, config, self.kernel.static_shapes, force_persistent,
                                 discovering)
        session.run()
        return session

    def _discover(self, tunables: dict | None = None):
        """The kernel's structure (config space) under the given tunable values (default: defaults)."""
        not_loopable: set = set()
        probe = Config(reduction_loops=[LOOP_DISCOVERY_CHUNK] * 64, **(tunables or {}))
        while True:
            try:
                session = self._session(probe, not_loopable, discovering=True)
            except exc.NotLoopable as err:
                new = set(err.rdims) - not_loopable
                if not new:
                    raise
                not_loopable |= new
                continue
            session.found.not_loopable = not_loopable
            return session.found

    def specialized_values_for(self, arguments: dict) -> tuple:
        session = CompileSession(self.kernel.parsed, arguments, Config(), self.kernel.static_shapes, set())
        session.run(host_only=True, baked=self.found.baked)
        return tuple(session.found.specialized) + tuple(session.found.guards)

    def tensor_json(self, value: torch.Tensor) -> dict:
        if nested.is_nested(value):
            values, offsets = nested.parts(value)
            return {"nested": [self.tensor_json(values), self.tensor_json(offsets)]}
        entry: dict[str, Any] = {"dtype": str(value.dtype).replace("torch.", ""), "rank": value.dim()}
        if self.kernel.static_shapes:
            entry["shape"] = list(value.shape)
        return entry

    def specialization_key(self) -> dict:
        """JSON-able identity of this specialization (part of a generated variant's id)."""
        out: dict[str, Any] = {}
        for name, value in self.arguments.items():
            if isinstance(value, torch.Tensor):
                out[name] = self.tensor_json(value)
            elif isinstance(value, types.FunctionType):
                out[name] = callable_json(value, self.tensor_json)
            elif isinstance(value, bool) or value is None or name in self.kernel.parsed.constexpr_params:
                out[name] = value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)
            elif isinstance(value, torch.dtype):
                out[name] = str(value).replace("torch.", "")
        if self.found.specialized:
            out["specialized"] = list(self.found.specialized)
        return out

    # ------------------------------------------------------------------ compilation
    def _config(self, config: Any) -> Config:
        return self.config_spec.normalize(Config(config) if config is not None else self.config_spec.default_config())

    def generate(self, config: Any, fn_name: str | None = None) -> GeneratedCode:
        config = self._config(config)
        session = self._session(config, self.found.not_loopable)
        return generated_code(session, fn_name or self.kernel.name)

    def to_triton_code(self, config: Any = None) -> str:
        config = self._config(config)
        key = config.to_json()
        if key not in self._code:
            code = self.generate(config)
            header = (
                f'"""Generated by build_tools.dsl from {self.kernel.parsed.filename}:{self.kernel.parsed.tree.lineno} '
                f"({self.kernel.name}).\n\nconfig: {key}\n\"\"\""
            )
            self._code[key] = code.module_source(header)
        return self._code[key]

    def compile_config(self, config: Any = None) -> Callable:
        config = self._config(config)
        key = config.to_json()
        if key not in self._compiled:
            source = self.to_triton_code(config)
            if os.environ.get("HELION_PRINT_OUTPUT_CODE") == "1":
                print(source, file=sys.stderr)
            self._compiled[key] = getattr(load_module(source), self.kernel.name)
        return self._compiled[key]

    def default_choice(self) -> Config:
        if self.kernel.config is not None:
            return self._config(self.kernel.config)
        if self.kernel.configs:
            return self._config(self.kernel.configs[0])
        return self.config_spec.default_config()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.compile_config(self.default_choice())(*args, **kwargs)


def size_bucket(size: int) -> int:
    """As in Helion, dynamic-shape kernels specialize sizes 0 and 1 only; the config space of a
    bound kernel reflects the sizes it was first bound with (`Kernel.reset()` rebinds)."""
    return min(int(size), 2)


def load_module(source: str):
    """Imports generated source from a file (Triton needs real source files for its JIT)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        from helion_kernels import _interpreter

        _interpreter.apply()  # corrects the interpreter's bf16 dot (idempotent)
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    name = f"_dsl_generated_{digest}"
    with _MODULE_LOCK:
        if name in sys.modules:
            return sys.modules[name]
        directory = os.path.join(tempfile.gettempdir(), f"dsl_generated_{os.getuid() if hasattr(os, 'getuid') else 0}")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name + ".py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(source)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
