"""Compile a DSL kernel's Triton kernels for sm_90 without a GPU, as the Triton JIT would.

`compile_launches(bound, config, args)` runs the generated launcher with launches intercepted:
each `kernel[grid](...)` is specialized like Triton's JIT does (alignment, ints equal to 1) and
compiled with `triton.compile` for GPUTarget("cuda", 90, 32). The results land in Triton's disk
cache under the same key the JIT computes, so a GPU process that later runs the kernel loads it
instead of compiling it. `ptxas_usage` reads registers and spills from the bundled ptxas.
Arguments may be meta tensors (only dtypes, shapes and strides matter).
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile

import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.runtime.jit import JITFunction, create_function_from_signature

TARGET = GPUTarget("cuda", 90, 32)


@contextlib.contextmanager
def intercepted_launches(compiled: list):
    """Within the block, JIT launches compile for sm_90 (appending (name, CompiledKernel)) and do not run."""
    from triton.backends.nvidia.compiler import CUDABackend

    backend = CUDABackend(TARGET)
    original = JITFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        kwargs["debug"] = kwargs.get("debug", self.debug) or knobs.runtime.debug
        kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
        binder = create_function_from_signature(self.signature, self.params, backend)
        bound_args, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = self._pack_args(backend, kwargs, bound_args, specialization, options)
        source = triton.compiler.ASTSource(self, signature, constexprs, attrs)
        compiled.append((self.__name__, triton.compile(source, target=TARGET, options=options.__dict__)))

    JITFunction.run = run
    try:
        yield
    finally:
        JITFunction.run = original


def compile_launches(bound, config, args) -> list:
    """[(kernel name, CompiledKernel)] for every launch the launcher of `config` makes on `args`."""
    launcher = bound.compile_config(config)
    compiled: list = []
    with intercepted_launches(compiled):
        launcher(*args)
    return compiled


def ptxas_usage(kernel) -> dict:
    """{'registers': int, 'spill_bytes': int} from `ptxas -v` on the kernel's PTX."""
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        with open(path, "w") as fh:
            fh.write(kernel.asm["ptx"])
        result = subprocess.run([ptxas, "-v", "--gpu-name", "sm_90a", path, "-o", os.path.join(tmp, "k.o")],
                                capture_output=True, text=True, check=True)
    text = result.stderr
    registers = re.search(r"Used (\d+) registers", text)
    spills = [int(v) for v in re.findall(r"(\d+) bytes spill (?:stores|loads)", text)]
    return {"registers": int(registers.group(1)) if registers else -1, "spill_bytes": max(spills, default=0)}
