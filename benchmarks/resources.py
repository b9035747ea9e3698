"""Resource evidence for the report: which Triton kernels one call of ours launched, and what the
compiler gave each (registers per thread, spilled registers, shared memory, warps, stages).

A launch hook records the CUDA function handles of the kernels a single call launches; each handle
is then found among the compiled kernels in the Triton caches of the generated modules' Triton
kernels (each a `JITFunction` global of its module from its first launch on). Handles, not names: one `@triton.jit` function compiled for several
specializations (head dims, causal or not) gives kernels of one name with different registers.
Only real launches on a GPU have these numbers (the interpreter compiles nothing).
"""
from __future__ import annotations

import importlib
import pkgutil

import torch
import triton
from triton import knobs

import helion_kernels._generated as generated


def _compiled_kernels() -> dict:
    """CUDA function handle -> compiled kernel, over every loaded kernel in every device cache of
    every generated `@triton.jit` function."""
    found = {}
    for info in pkgutil.iter_modules(generated.__path__):
        module = importlib.import_module(f"{generated.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, triton.runtime.JITFunction):
                for caches in value.device_caches.values():
                    for kernel in caches[0].values():
                        if kernel.function is not None:
                            found[kernel.function] = kernel
    return found


def launched_kernels(fn) -> list[tuple[str, int]]:
    """(name, CUDA function handle) of each Triton kernel one call of `fn` launches, in launch order."""
    launched = []
    previous = knobs.runtime.launch_enter_hook

    def record(metadata) -> None:
        fields = metadata.get()
        launched.append((fields["name"], fields["function"]))

    knobs.runtime.launch_enter_hook = record
    try:
        fn()
        torch.cuda.synchronize()
    finally:
        knobs.runtime.launch_enter_hook = previous
    return launched


def describe(fn) -> str:
    """One line per launched kernel: "name: R regs, S spills, B KiB smem, W warps, N stages"."""
    launched = launched_kernels(fn)
    compiled = _compiled_kernels()   # after the call, which may have compiled a kernel
    parts = []
    for name, function in dict.fromkeys(launched):
        kernel = compiled.get(function)
        if kernel is None:
            parts.append(f"{name}: not found in the generated modules' caches")
            continue
        meta = kernel.metadata
        parts.append(f"{name}: {kernel.n_regs} regs, {kernel.n_spills} spills, {meta.shared // 1024} KiB smem, "
                     f"{meta.num_warps} warps, {meta.num_stages} stages")
    return "; ".join(parts)
