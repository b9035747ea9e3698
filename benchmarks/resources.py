"""Resource evidence for the report: which Triton kernels one call of ours launched, and what the
compiler gave each (registers per thread, spilled registers, shared memory, warps, stages).

A launch hook records the names of the kernels a single call launches; the compiled kernels are then
found in the Triton caches of the generated modules' `@triton.jit` functions. Only real launches on
a GPU have these numbers (the interpreter compiles nothing).
"""
from __future__ import annotations

import importlib
import pkgutil

import torch
import triton
from triton import knobs

import helion_kernels._generated as generated


def _compiled_kernels() -> dict:
    """name -> compiled kernel, over every device cache of every generated `@triton.jit` function."""
    found = {}
    for info in pkgutil.iter_modules(generated.__path__):
        module = importlib.import_module(f"{generated.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, triton.runtime.JITFunction):
                for caches in value.device_caches.values():
                    for kernel in caches[0].values():
                        found[kernel.name] = kernel
    return found


def launched_kernels(fn) -> list[str]:
    """Names of the Triton kernels one call of `fn` launches, in launch order."""
    names = []
    previous = knobs.runtime.launch_enter_hook
    knobs.runtime.launch_enter_hook = lambda metadata: names.append(metadata.get()["name"])
    try:
        fn()
        torch.cuda.synchronize()
    finally:
        knobs.runtime.launch_enter_hook = previous
    return names


def describe(fn) -> str:
    """One line per launched kernel: "name: R regs, S spills, B KiB smem, W warps, N stages"."""
    compiled = _compiled_kernels()
    parts = []
    for name in dict.fromkeys(launched_kernels(fn)):
        kernel = compiled.get(name)
        if kernel is None:
            parts.append(f"{name}: not found in the generated modules' caches")
            continue
        meta = kernel.metadata
        parts.append(f"{name}: {kernel.n_regs} regs, {kernel.n_spills} spills, {meta.shared // 1024} KiB smem, "
                     f"{meta.num_warps} warps, {meta.num_stages} stages")
    return "; ".join(parts)
