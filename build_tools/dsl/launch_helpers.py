"""Launch helpers that every generated module carries: `module.LAUNCH_HELPERS` is this file's code
after its imports, copied verbatim after the C source of `native_launch` (generated modules import
only the standard library, torch and triton).

`_launch(kernel, grid, args, constants, num_warps, num_stages)` does what
`kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages)` does, where `args`
are the kernel's run-time arguments and `constants` its constexpr values, in signature order.
Triton's `JITFunction.run` binds and specializes every argument, builds its cache key, looks up
device and stream, builds launch metadata and calls the launch hooks on every launch. Here the
first launch of a (kernel, options, current device, argument specialization) goes through Triton
and the compiled kernel it returns is kept; later launches launch it directly on the current
stream. The key keeps all Triton specializes on: each int's value (Triton specializes ints equal to
1, divisible by 16 and wider than 32 bits), each tensor's dtype and 16-byte alignment, floats as
float, the constexprs, the options and Triton's debug and instrumentation settings. Triton's plain
path runs under the interpreter, without a CUDA build of torch, for kernels with pre-run hooks or
used globals, and while a launch hook is set. A launch over an empty grid (a dimension of 0
programs: a loop over an empty range, or a pass that a config switches off) returns before any of
this.

`_launch_python` is that logic in Python; the kept launch is the launcher's C function under Triton
3.6's CUDA launcher without scratch buffers (skipping its Python wrapper, `_runner`), else the
launcher. On a CUDA host under Triton 3.6 the first kernel that needs neither scratch buffers, PDL,
a cooperative grid nor clusters compiles `native_launch`'s C source (once per machine, with
Triton's own C build) and rebinds `_launch` to its `launch`, which builds the same key in C and
launches such kernels with cuLaunchKernel itself (the kept entry is then a `bytes` descriptor), so
a repeated launch runs no Python; it hands every other case to `_launch_python`.

`_new_empty(t, dtype, *sizes)` is the launchers' `t.new_empty(*sizes, dtype=dtype)` (fast_launch
rewrites their `new_empty` calls into it). When the native launch is built it is rebound to the
native allocation through libtorch's C shim, which skips torch's Python argument parsing (see
native_launch); where the shim's symbols are not found it keeps calling torch.

`_record(plan, args, missing)` runs a direct call's plan (helion_kernels/_direct) once with this
module's `_launch`, `_new_empty`, `torch` and `_counters` swapped for wrappers that note its
launches, allocations and counter buffers, and turns them into a native plan (native_replay's `replay_plan`); `_replayer`
binds native_replay's `replay`, which runs such plans from C.

A kernel compiled under options beside num_warps and num_stages (a config's `maxnreg`) carries
them on its function as `hk_compile_options` (set by its module after its definition; they are part
of the kernel's name, so one kernel object has one set); Triton's compiling launches pass them.

`_cdiv` and `_next_power_of_2` are Triton's host helpers as plain functions (Triton's are
constexpr functions, costly to call from Python).

`_jit_on_first_launch` is the generated kernels' decorator: a kernel stays a `_LazyKernel` (its
plain function) until its first launch, where `_launch_python` (the native launch hands it any
kernel it has not seen) or a recording applies `triton.jit` and puts the Triton kernel in the
module's globals, which the launchers read from then on. `triton.jit` reads and tokenizes a
kernel's source; defining every kernel of a module at import took most of an op's first call.
"""
from __future__ import annotations

import torch
import triton

from .native_launch import SOURCE as _NATIVE_LAUNCH_SOURCE

_LAUNCHES: dict = {}
_LAUNCHES_PER_KERNEL = 1024
# the argument layout of the C function under Triton 3.6's CudaLauncher.__call__, and Triton 3.6's
# kernel parameters (two trailing scratch pointers), which the native launch passes
_C_LAUNCH_LAYOUT = triton.__version__.split(".")[:2] == ["3", "6"]
# the native launch's type code of each kernel parameter type it passes (pointers: "p")
_NATIVE_CODES = {"constexpr": "c", "i1": "1", "i8": "1", "u1": "1", "u8": "1", "i16": "2", "u16": "2",
                 "i32": "4", "u32": "4", "i64": "8", "u64": "8", "fp16": "h", "bf16": "b", "fp32": "f",
                 "f32": "f", "fp64": "d"}
_native = None  # the native launch module once built; False when it cannot be built here
_replay = False  # whether the native module replays recorded calls here (native_replay)
_RECORDING = {}  # "thread": the thread recording a call (one at a time)
_DEFINED: dict = {}  # a lazy kernel's function -> its Triton kernel


class _LazyKernel:
    """A generated kernel before its first launch: its plain function, which `define` turns into
    the Triton kernel and puts in the module's globals under the function's name, where the
    launchers find it from then on."""

    __slots__ = ("fn", "kernel")

    def __init__(self, fn):
        self.fn = fn
        self.kernel = None

    def define(self):
        if self.kernel is None:
            # setdefault is atomic: threads defining the kernel at once all take the first kernel
            self.kernel = _DEFINED.setdefault(self.fn, triton.jit(self.fn))
            self.fn.__globals__[self.fn.__name__] = self.kernel
        return self.kernel


def _jit_on_first_launch(fn) -> _LazyKernel:
    """The generated kernels' decorator: `triton.jit` on the kernel's first launch, not at import
    (it reads and hashes the kernel's source, which for every kernel of a module took most of an
    op's first call)."""
    return _LazyKernel(fn)


def _plain_cuda_launcher(run) -> bool:
    """Whether `run` is Triton 3.6's CUDA launcher with no scratch buffer to allocate."""
    return _C_LAUNCH_LAYOUT and run.__class__.__name__ == "CudaLauncher" and not run.global_scratch_size \
        and not run.profile_scratch_size


def _runner(compiled):
    """(callable, arguments between the function handle and the kernel's own) that launch
    `compiled` on a grid, a stream and its function handle: its launcher's C function when the
    launcher is Triton 3.6's CUDA one with no scratch buffer to allocate, else the launcher."""
    run = compiled.run
    if _plain_cuda_launcher(run):
        return run.launch, (run.launch_cooperative_grid, run.launch_pdl, None, None,
                            compiled.packed_metadata, None, None, None)
    return run, (compiled.packed_metadata, None, None, None)


def _native_descriptor(compiled, count):
    """The native launch's descriptor of `compiled` (launched with `count` arguments and constants),
    or None when the native launch cannot run it."""
    run = compiled.run
    if not _plain_cuda_launcher(run) or run.launch_pdl or run.launch_cooperative_grid:
        return None
    num_warps, num_ctas, shared = compiled.packed_metadata
    codes = [_NATIVE_CODES.get(ty, "p" if ty.__class__ is str and ty.startswith("*") else None)
             for ty in compiled.src.signature.values()]
    if num_ctas != 1 or len(codes) != count or None in codes or _native_module() is None:
        return None
    return compiled.function.to_bytes(8, "little") + (32 * num_warps).to_bytes(4, "little") + \
        shared.to_bytes(4, "little") + count.to_bytes(4, "little") + "".join(codes).encode()


def _native_module():
    """The native launch module, built on first use, with `_launch` rebound to its `launch` (and
    `_new_empty` to its allocation where libtorch's C shim is found); None
    where it cannot be built (no C compiler), where Triton's launcher keeps launching."""
    global _native, _launch, _new_empty, _replay
    if _native is None:
        _native = _build_native() or False
        if _native:
            _launch = _native_launch(_native, torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream)
            _new_empty = _native_new_empty(_native) or _new_empty
            _replay = _native_replay_init(_native)
    return _native or None


def _build_native():
    """The native launch module compiled by Triton's C build (cached per machine), or None."""
    import warnings
    from triton.runtime.build import compile_module_from_src
    try:
        return compile_module_from_src(_NATIVE_LAUNCH_SOURCE, "hk_native_launch", libraries=["dl"])
    except Exception as error:  # noqa: BLE001 - any build failure leaves Triton's launch in place
        warnings.warn(f"helion_kernels: native launch not built, Triton's launcher is used: {error}")
        return None


def _native_launch(native, get_device, get_stream):
    """`_launch` through `native.launch`, with this module's launches and fallback."""
    import functools
    state = (_LAUNCHES, _launch_python, get_device, get_stream, triton.knobs.runtime, triton.knobs.compilation,
             triton.knobs.HookChain, torch.Tensor)
    return functools.partial(native.launch, state)


def _native_new_empty(native):
    """`_new_empty` allocating through `native`, or None where libtorch's C shim or THPVariable_Wrap
    is not found among the libraries torch loaded."""
    import functools
    import os
    library = os.path.join(os.path.dirname(torch.__file__), "lib")
    dtypes = native.alloc_init(os.path.join(library, "libtorch_cpu.so"), os.path.join(library, "libtorch_python.so"))
    if dtypes is None:
        return None
    codes = {getattr(torch, name): code for name, code in dtypes if isinstance(getattr(torch, name, None), torch.dtype)}
    # torch's own new_empty, which a replacement (a test's poisoned allocation) does not change: while
    # Tensor.new_empty is another function, or a torch function mode is active, torch's call is made
    return functools.partial(native.new_empty, (torch.Tensor, codes, torch._C.TensorBase.new_empty,
                                                torch._C._is_torch_function_mode_enabled, _new_empty_torch))


def _native_replay_init(native) -> bool:
    """Whether `native` found what replaying recorded calls needs (see native_replay)."""
    import os
    library = os.path.join(os.path.dirname(torch.__file__), "lib")
    probe = torch.ones(1)
    return bool(native.replay_init(probe, probe._cdata, os.path.join(library, "libtorch_cpu.so"),
                                   os.path.join(library, "libtorch_cuda.so")))


def _replay_state(missing):
    """The native replay's state tuple (see native_replay), with `missing` as its MISSING."""
    functions = torch._C._VariableFunctions  # torch.empty_like and torch.empty, never replaced
    return (missing, torch.Tensor, torch.nn.Parameter, torch._C._are_functorch_transforms_active,
            torch._C._is_torch_function_mode_enabled, torch, torch._C.TensorBase.new_empty, functions.empty_like,
            functions.empty, triton.knobs.runtime, triton.knobs.compilation, triton.knobs.HookChain,
            getattr(torch._C, "_cuda_getCurrentRawStream", None))  # None in CPU-only torch builds


def _replayer(missing, table):
    """The native `replay` bound to its state and to `table` (the dict of recorded plans)."""
    import functools
    return functools.partial(_native.replay, _replay_state(missing), table)


def _record(plan, args, missing):
    """(plan(*args), the native replay plan of that call or None), `missing` being the replay's
    MISSING. While the call runs, this module's `_launch`, `_new_empty`, `torch` and `_counters`
    are recording wrappers that note, on this thread only, each launch, each allocation
    (`_new_empty`, `torch.empty`, `torch.empty_like`) and each counter buffer; one call is recorded
    at a time (a second thread's call just runs), and none while the stream is captured."""
    global _launch, _new_empty, torch, _counters
    import threading
    me = threading.get_ident()
    # a call captured into a CUDA graph is not recorded: its counters belong to the graph
    if not _replay or torch.cuda.is_current_stream_capturing() or _RECORDING.setdefault("thread", me) != me:
        return plan(*args), None
    launches, allocations, buffers = [], [], []
    launch, new_empty, real_torch = _launch, _new_empty, torch
    counters = globals().get("_counters")

    def recorded(tensor):
        if threading.get_ident() == me:
            allocations.append(tensor)
        return tensor

    def recording_launch(kernel, grid, args, constants, num_warps, num_stages):
        if kernel.__class__ is _LazyKernel:
            kernel = kernel.define()
        launch(kernel, grid, args, constants, num_warps, num_stages)
        if threading.get_ident() == me:
            launches.append((kernel, grid, args, constants, num_warps, num_stages))

    class RecordingTorch:
        def __getattr__(self, name):
            return getattr(real_torch, name)

        @staticmethod
        def empty(*sizes, **options):
            return recorded(real_torch.empty(*sizes, **options))

        @staticmethod
        def empty_like(*tensor, **options):
            return recorded(real_torch.empty_like(*tensor, **options))

    def recording_counters(count, device, lane=0):
        buffer = counters(count, device, lane)
        if threading.get_ident() == me:
            buffers.append(buffer)
        return buffer

    _launch = recording_launch
    _new_empty = lambda t, dtype, *sizes: recorded(new_empty(t, dtype, *sizes))  # noqa: E731
    torch = RecordingTorch()
    if counters is not None:
        _counters = recording_counters
    try:
        out = plan(*args)
    finally:
        _launch, _new_empty, torch = launch, new_empty, real_torch
        if counters is not None:
            _counters = counters
        del _RECORDING["thread"]
    return out, _replay_plan(_replay_state(missing), args, allocations, buffers, launches, out)


def _replay_plan(state, args, allocations, buffers, launches, out):
    """The native plan replaying a recorded call, or None when the call cannot be replayed: a
    launch without a native descriptor, an output that is neither an allocation nor a reshaped view
    of one (or a tuple of such, see `_allocation_of_view`), a launched tensor that is neither an
    argument (or a view of one, see `_argument_of_view`), an allocation nor one of the stream's
    `buffers` (native_replay checks)."""
    device = torch._C._cuda_getDevice()
    outs = (out,) if isinstance(out, torch.Tensor) else out if out.__class__ is tuple else None
    if outs is None:
        return None
    # an output that views an allocation in another shape (a 3-D call's rows viewed back) replaces
    # that allocation: the replay allocates it in the output's shape, the same contiguous memory
    reshaped = {}
    for t in outs:
        source = _allocation_of_view(t, allocations, outs) if isinstance(t, torch.Tensor) else None
        if source is not None:
            reshaped[id(source)] = t
    allocations = [reshaped.get(id(t), t) for t in allocations]
    known = {id(t) for t in (*args, *allocations, *buffers)}
    descriptors, kernels = [], []
    for kernel, grid, launch_args, constants, num_warps, num_stages in launches:
        if 0 in grid:
            continue
        launch_args = tuple(reshaped.get(id(t), t) for t in launch_args)
        launch_args = tuple(_argument_of_view(t, args) if isinstance(t, torch.Tensor) and id(t) not in known else t
                            for t in launch_args)
        kernel_state = _LAUNCHES.get(id(kernel))
        kept = None if kernel_state is None or kernel_state[1] is None else \
            kernel_state[1].get(_launch_key(device, launch_args, constants, num_warps, num_stages))
        if kept.__class__ is not bytes:
            return None
        descriptors.append((kept, (*grid, 1, 1)[:3], (*launch_args, *constants)))
        kernels.append(kernel)
    index = {id(t): j for j, t in enumerate(allocations)}
    outputs = tuple(index.get(id(t)) for t in outs)
    if None in outputs:
        return None
    return _native.replay_plan(state, tuple(args), tuple(allocations), tuple(descriptors),
                               outputs[0] if isinstance(out, torch.Tensor) else outputs, device,
                               triton.knobs.runtime.debug, triton.knobs.compilation.instrumentation_mode,
                               tuple(kernels), tuple(buffers), torch._C._cuda_getCurrentRawStream(device))


def _allocation_of_view(view, allocations, outputs):
    """The allocation that `view` shows in another shape, or None: both contiguous, of one dtype and
    element count, at the same storage and first element, and the allocation itself not an output
    (an allocated [M, N] out viewed back as a 3-D input's shape). A launch reads the allocation only
    through its pointer and the recorded sizes and strides, so allocating the view's shape instead
    leaves every launch as recorded."""
    if any(view is a for a in allocations):
        return None
    for source in allocations:
        if source.data_ptr() == view.data_ptr() and source.untyped_storage().data_ptr() == \
                view.untyped_storage().data_ptr() and source.dtype == view.dtype and \
                source.numel() == view.numel() and source.is_contiguous() and view.is_contiguous() and \
                not any(source is o for o in outputs):
            return source
    return None


def _argument_of_view(view, args):
    """The one argument whose storage and first element `view` shares (a plan's `weight.t()`: the
    kernel reads the argument's pointer with the view's strides, which the recorded argument
    strides fix), else `view` itself (the plan is then not made)."""
    storage = view.untyped_storage().data_ptr()
    sources = [a for a in args if isinstance(a, torch.Tensor) and a.data_ptr() == view.data_ptr()
               and a.untyped_storage().data_ptr() == storage]
    return sources[0] if len(sources) == 1 else view


def _compile_options(kernel) -> dict:
    """The options beside num_warps and num_stages that `kernel` compiles under (`maxnreg`): its
    function's `hk_compile_options`, set by its module; none by default (or for an object without a
    function)."""
    return getattr(getattr(kernel, "fn", None), "hk_compile_options", None) or {}


def _launch_python(kernel, grid, args, constants, num_warps, num_stages):
    """kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages); a repeated
    argument specialization on the same device launches the compiled kernel directly; an empty
    grid launches nothing and returns at once."""
    if 0 in grid:
        return
    # keyed by id (hashing a JITFunction is slow); the entry holds the kernel, so the id stays its own
    state = _LAUNCHES.get(id(kernel))
    if state is None and kernel.__class__ is _LazyKernel:  # its first launch: defined now, its global after
        kernel = kernel.define()
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
        kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages, **_compile_options(kernel))
        return
    device = torch._C._cuda_getDevice()  # torch.cuda.current_device() without its lazy-init check
    key = _launch_key(device, args, constants, num_warps, num_stages)
    launch = launches.get(key)
    if launch is None or launch.__class__ is bytes:
        # a native descriptor here is a launch the native path handed back (no current CUDA context,
        # a tensor off the GPU): Triton's launch sets the context up or reports the error
        compiled = kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages,
                                **_compile_options(kernel))
        if launch is None and compiled is not None and not kernel.used_global_vals:
            if len(launches) >= _LAUNCHES_PER_KERNEL:
                launches.clear()
            launches[key] = _native_descriptor(compiled, len(args) + len(constants)) or \
                (*_runner(compiled), compiled.function)
        return
    run, options, function = launch
    if len(grid) < 3:
        grid = (*grid, 1, 1)
    run(grid[0], grid[1], grid[2], torch._C._cuda_getCurrentRawStream(device), function, *options,
        *args, *constants)


def _launch_key(device, args, constants, num_warps, num_stages):
    """The key of a launch's kept entry (the native launch builds the same one)."""
    key = [device, num_warps, num_stages, constants, triton.knobs.runtime.debug,
           triton.knobs.compilation.instrumentation_mode]
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
        elif kind.__name__ == "TensorDescriptor":  # a host-built TMA descriptor: Triton specializes on these
            key.append((kind, arg.base.dtype, tuple(arg.block_shape), getattr(arg, "layout", None), arg.padding))
        else:
            key.append((kind, arg))
    return tuple(key)


_launch = _launch_python


def _new_empty_torch(t, dtype, *sizes):
    return t.new_empty(*sizes, dtype=dtype)


_new_empty = _new_empty_torch


def _cdiv(a, b):
    return (a + b - 1) // b


def _next_power_of_2(n):
    return 1 << (n - 1).bit_length() if n > 0 else 0
