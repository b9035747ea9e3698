"""Launch helpers that every generated module carries: `module.LAUNCH_HELPERS` is this file's code
after its imports, copied verbatim (generated modules import only torch, triton and math).

`_launch(kernel, grid, args, constants, num_warps, num_stages)` does what
`kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages)` does, where `args`
are the kernel's run-time arguments and `constants` its constexpr values, in signature order.
Triton's `JITFunction.run` binds and specializes every argument, builds its cache key, looks up
device and stream, builds launch metadata and calls the launch hooks on every launch. Here the
first launch of a (kernel, options, current device, argument specialization) goes through Triton
and the compiled kernel it returns is kept; later launches call that kernel's launcher directly on
the current stream, passing every argument as Triton does (constexprs included; its launcher skips
them). Under Triton 3.6's CUDA launcher, for a kernel without scratch buffers, the call goes to the
launcher's C function itself, skipping its Python wrapper (`_runner`). The key keeps all Triton
specializes on: each int's value (Triton specializes ints equal to 1, divisible by 16 and wider
than 32 bits), each tensor's dtype and 16-byte alignment, floats as float, the constexprs, the
options and Triton's debug and instrumentation settings. Triton's plain path runs under the
interpreter, without a CUDA build of torch, for kernels with pre-run hooks or used globals, and
while a launch hook is set. A launch over an empty grid (a dimension of 0 programs: a loop over an
empty range, or a pass that a config switches off) returns before any of this.

`_cdiv` and `_next_power_of_2` are Triton's host helpers as plain functions (Triton's are
constexpr functions, costly to call from Python).
"""
from __future__ import annotations

import torch
import triton

_LAUNCHES: dict = {}
_LAUNCHES_PER_KERNEL = 1024
# the argument layout of the C function under Triton 3.6's CudaLauncher.__call__
_C_LAUNCH_LAYOUT = triton.__version__.split(".")[:2] == ["3", "6"]


def _runner(compiled):
    """(callable, arguments between the function handle and the kernel's own) that launch
    `compiled` on a grid, a stream and its function handle: its launcher's C function when the
    launcher is Triton 3.6's CUDA one with no scratch buffer to allocate, else the launcher."""
    run = compiled.run
    if _C_LAUNCH_LAYOUT and run.__class__.__name__ == "CudaLauncher" and not run.global_scratch_size \
            and not run.profile_scratch_size:
        return run.launch, (run.launch_cooperative_grid, run.launch_pdl, None, None,
                            compiled.packed_metadata, None, None, None)
    return run, (compiled.packed_metadata, None, None, None)


def _launch(kernel, grid, args, constants, num_warps, num_stages):
    """kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages); a repeated
    argument specialization on the same device launches the compiled kernel directly; an empty
    grid launches nothing and returns at once."""
    if 0 in grid:
        return
    # keyed by id (hashing a JITFunction is slow); the entry holds the kernel, so the id stays its own
    state = _LAUNCHES.get(id(kernel))
    if state is None:
        # CPU-only torch builds (cross-compiling on a machine without a GPU) have no CUDA device API
        fast = isinstance(kernel, triton.runtime.jit.JITFunction) and hasattr(torch._C, "_cuda_getDevice")
        state = _LAUNCHES[id(kernel)] = (kernel, {} if fast else None)
    launches = state[1]
    runtime = triton.knobs.runtime
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    hooked = (enter.calls if enter.__class__ is triton.knobs.HookChain else enter is not None) or \
        (leave.calls if leave.__class__ is triton.knobs.HookChain else leave is not None)
    if launches is None or hooked or kernel.pre_run_hooks:
        kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages)
        return
    device = torch._C._cuda_getDevice()  # torch.cuda.current_device() without its lazy-init check
    key = [device, num_warps, num_stages, constants, runtime.debug, triton.knobs.compilation.instrumentation_mode]
    for arg in args:
        kind = arg.__class__
        if kind is int:
            key.append(arg)
        elif kind is float:
            key.append(float)
        elif isinstance(arg, torch.Tensor):
            # a dtype always precedes the flag, so the flat key cannot confuse it with an int
            key.append(arg.dtype)
            key.append(arg.data_ptr() % 16 == 0)
        else:
            key.append((kind, arg))
    key = tuple(key)
    launch = launches.get(key)
    if launch is None:
        compiled = kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages)
        if compiled is not None and not kernel.used_global_vals:
            if len(launches) >= _LAUNCHES_PER_KERNEL:
                launches.clear()
            launches[key] = (*_runner(compiled), compiled.function)
        return
    run, options, function = launch
    if len(grid) < 3:
        grid = (*grid, 1, 1)
    run(grid[0], grid[1], grid[2], torch._C._cuda_getCurrentRawStream(device), function, *options,
        *args, *constants)


def _cdiv(a, b):
    return (a + b - 1) // b


def _next_power_of_2(n):
    return 1 << (n - 1).bit_length() if n > 0 else 0
