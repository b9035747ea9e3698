"""Cross-compiles generated Triton source for a GPU this machine may not have.

Runs a bound DSL kernel's host wrapper on CPU tensors with every `@triton.jit` launch captured
instead of executed, then hands each launch (its real argument specialization, constexprs and
num_warps/num_stages) to `triton.compile` for a CUDA target. All of Triton's MLIR passes and the
bundled ptxas run, so compiler assertions and ptxas failures of the GPU build show up here.
`compile_launch` also takes a `gluon.jit` function (Triton's explicit-layout dialect), which has no
interpreter: compiling it for sm_90 is all a machine without a GPU can check of it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Iterator, Sequence

import torch
import triton
import triton.language as tl
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import JITFunction, create_function_from_signature

from build_tools.dsl.kernel import load_module

H100 = GPUTarget("cuda", 90, 32)
DIAGNOSTIC = re.compile(r"Assertion|error:|Pipeline failed|ptxas")


class CrossCompileError(RuntimeError):
    """Triton failed to compile a launch; the message carries the compiler's own diagnostics."""


@dataclasses.dataclass
class CrossCompiled:
    """One launched `@triton.jit` function compiled for `target`: `asm` maps ttir/ttgir/llir/ptx/cubin;
    `global_scratch_size` is the global scratch (tensor descriptors built in the kernel) per program;
    `shared_memory` the bytes of shared memory a program takes, as Triton launches it (dynamic
    shared memory, which `ptxas -v` does not count)."""
    name: str
    target: GPUTarget
    asm: dict
    global_scratch_size: int
    shared_memory: int = 0

    def ptxas_info(self) -> dict:
        """Registers, spill bytes and shared memory reported by `ptxas -v` for the kernel's PTX, and
        whether ptxas serialized its wgmma instructions (its "wgmma.mma_async instructions are
        serialized" warnings: C7512 for want of registers, C7514 where other instructions read the
        accumulator registers of a wgmma in flight on some path)."""
        arch = f"sm_{self.target.arch}a" if self.target.arch >= 90 else f"sm_{self.target.arch}"
        ptxas = knobs.nvidia.ptxas.path
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
            fh.write(self.asm["ptx"])
        try:
            done = subprocess.run([ptxas, "-v", f"--gpu-name={arch}", fh.name, "-o", os.devnull],
                                  capture_output=True, text=True, check=True)
        finally:
            os.unlink(fh.name)
        log = done.stderr
        numbers = {
            "registers": r"Used (\d+) registers",
            "spill_stores": r"(\d+) bytes spill stores",
            "spill_loads": r"(\d+) bytes spill loads",
            "shared_bytes": r"(\d+) bytes smem",
        }
        out = {}
        for key, pattern in numbers.items():
            match = re.search(pattern, log)
            out[key] = int(match.group(1)) if match else 0
        out["wgmma_serialized"] = "wgmma.mma_async instructions are serialized" in log
        return out

    def features(self) -> dict:
        """What the compiler chose, read off the TTGIR/PTX: wgmma, async copies, TMA loads and stores, warp
        specialization, and the register counts the warp groups move to (`setmaxnreg`)."""
        ttgir, ptx = self.asm["ttgir"], self.asm["ptx"]
        return {
            "wgmma": "wgmma.mma_async" in ptx,
            "async_copies": ttgir.count("ttg.async_copy_global_to_local"),
            "tma_loads": ttgir.count("async_tma_copy_global_to_local"),
            "tma_stores": ttgir.count("async_tma_copy_local_to_global"),
            "warp_specialize": "ttg.warp_specialize" in ttgir,
            "setmaxnreg": sorted({int(n) for n in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)}),
        }


@contextlib.contextmanager
def _stderr_into(sink):
    """Redirects file descriptor 2 (where MLIR and LLVM print assertions) into `sink`."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _require_compiling_triton() -> None:
    """With TRITON_INTERPRET=1 at import, Triton's own library functions (tl.sum, ...) are built for the
    interpreter and cannot be compiled; cross-compiling needs a process started without it."""
    if not isinstance(tl.sum, JITFunction):
        raise RuntimeError("cross-compiling needs a Python process started without TRITON_INTERPRET=1")


@contextlib.contextmanager
def _launches_captured(module) -> Iterator[list]:
    """While active, launching a `@triton.jit` function of `module` records (function, args, kwargs)."""
    launches: list = []
    lazy = getattr(module, "_LazyKernel", None)  # generated kernels are defined on their first launch
    for value in list(vars(module).values()):
        if lazy is not None and isinstance(value, lazy):
            value.define()
    functions = [value for value in vars(module).values() if isinstance(value, JITFunction)]
    for fn in functions:
        def record(*args, grid, warmup, _fn=fn, **kwargs):
            launches.append((_fn, args, kwargs))
        fn.run = record
    try:
        yield launches
    finally:
        for fn in functions:
            del fn.run


def compile_launch(fn: JITFunction, args: Sequence, kwargs: dict, target: GPUTarget = H100) -> CrossCompiled:
    """Compile one launch of `fn` (a `triton.jit` or `gluon.jit` function) the way `JITFunction.run`
    would on a `target` device."""
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = dict(kwargs)
    bound_args, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound_args, specialization, options)
    source = (GluonASTSource if fn.is_gluon() else ASTSource)(fn, signature, constexprs, attrs)
    with tempfile.TemporaryFile() as log:
        try:
            with _stderr_into(log):
                compiled = triton.compile(source, target=target, options=options.__dict__)
        except Exception as err:
            log.seek(0)
            lines = [line.strip() for line in log.read().decode(errors="replace").splitlines()]
            found = [line for line in lines if DIAGNOSTIC.search(line)]
            raise CrossCompileError(f"{fn.__name__}: {type(err).__name__}: {err}\n" + "\n".join(found)) from err
    return CrossCompiled(fn.__name__, target, compiled.asm, compiled.metadata.global_scratch_size,
                         compiled.metadata.shared)


def cross_compile_source(source: str, host_fn: str, args: Sequence, kwargs: dict | None = None,
                         target: GPUTarget = H100) -> list[CrossCompiled]:
    """Cross-compile every kernel launch that `host_fn` of the generated module `source` makes when
    called with `args` (CPU tensors). The launcher's device queries that change the kernels it
    launches answer for `target`, not for the CPU tensors (`_dependent_launch`: the
    griddepcontrol steps of `dependent_launches` kernels, compute capability 9.0 and later)."""
    _require_compiling_triton()
    module = load_module(source)
    if hasattr(module, "_dependent_launch"):
        module._dependent_launch = lambda t: target.arch >= 90
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with _launches_captured(module) as launches:
        getattr(module, host_fn)(*copies, **(kwargs or {}))
    return [compile_launch(fn, launch_args, launch_kwargs, target) for fn, launch_args, launch_kwargs in launches]


def cross_compile(bound, args: Sequence, config: Any = None, target: GPUTarget = H100,
                  kwargs: dict | None = None) -> list[CrossCompiled]:
    """Cross-compile the launches of `bound` (a BoundKernel) for `args` under `config` (default: the
    spec's default config)."""
    return cross_compile_source(bound.to_triton_code(config), bound.kernel.name, args, kwargs, target)
