"""The generated modules' launch: Triton's own launch for a new (kernel, options, device,
argument specialization), the compiled kernel launched directly for a repeated one, and Triton's
path whenever a hook, a pre-run hook or a used global is involved; under Triton 3.6's CUDA
launcher without scratch buffers the launcher's C function is called directly. Each test runs the
Python `_launch_python` and the native launch (its C source compiled here, as on a GPU host; it
builds the same key and calls the same launcher entries). A real JITFunction stands in for a
generated kernel; its `run` (Triton's launch) and the CUDA device/stream queries are faked, so this
runs without a GPU (tests/runtime/test_native_launch.py checks the real launches on the GPU)."""
import functools

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from helion_kernels._generated import softmax as generated


def _body(x, n, BLOCK: tl.constexpr):
    pass


class Compiled:
    """What Triton's launch returns: the launcher (`run`), the function handle and its metadata."""

    function = "function"
    packed_metadata = ("metadata",)

    def __init__(self):
        self.launches = []

    def run(self, *args):
        self.launches.append(args)


class Fake:
    def __init__(self, monkeypatch, path):
        self.kernel = JITFunction(_body)
        self.compiled = Compiled()
        self.plain = []
        self.device = 0
        self.kernel.run = self._triton_run
        monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: self.device, raising=False)
        monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 100 + device, raising=False)
        self.run_launch = generated._launch_python if path == "python" else generated._native_launch(
            _native_module(), lambda: self.device, lambda device: 100 + device)

    def _triton_run(self, *args, grid, warmup, **kwargs):
        self.plain.append((grid, args, kwargs))
        return self.compiled

    def launch(self, grid, args, constants=(16,), num_warps=4, num_stages=2):
        self.run_launch(self.kernel, grid, args, constants, num_warps, num_stages)

    def counts(self):
        return len(self.plain), len(self.compiled.launches)


@functools.cache
def _native_module():
    native = generated._build_native()
    assert native is not None, "the native launch's C source did not build"
    return native


@pytest.fixture(params=["python", "native"])
def fake(monkeypatch, request):
    return Fake(monkeypatch, request.param)


def test_repeated_specialization_launches_the_compiled_kernel(fake):
    x = torch.ones(4)
    fake.launch((3,), (x, 5))
    grid, args, kwargs = fake.plain[0]
    assert grid == (3,) and args[0] is x and args[1:] == (5, 16) and kwargs == {"num_warps": 4, "num_stages": 2}
    fake.launch((3,), (x, 5))
    fake.launch((2, 3), (x, 5))
    assert fake.counts() == (1, 2)
    first, second = fake.compiled.launches
    assert first[:9] == (3, 1, 1, 100, "function", ("metadata",), None, None, None)
    assert first[9] is x and first[10:] == (5, 16)
    assert second[:3] == (2, 3, 1)


@pytest.mark.parametrize("change", ["int", "int_one", "float_for_int", "bool_for_int", "none_for_int", "dtype",
                                    "alignment", "constant", "num_warps", "device"])
def test_anything_triton_specializes_on_is_a_new_key(fake, change):
    x = torch.ones(8)
    fake.launch((1,), (x, 32))
    fake.launch((1,), (x, 32))
    assert fake.counts() == (1, 1)
    args, constants, warps = (x, 32), (16,), 4
    if change == "int":
        args = (x, 48)
    elif change == "int_one":
        args = (x, 1)
    elif change == "float_for_int":
        args = (x, 32.0)
    elif change == "bool_for_int":
        args = (x, True)
    elif change == "none_for_int":
        args = (x, None)
    elif change == "dtype":
        args = (x.half(), 32)
    elif change == "alignment":
        args = (x[1:], 32)
    elif change == "constant":
        constants = (32,)
    elif change == "num_warps":
        warps = 8
    else:
        fake.device = 1
    fake.launch((1,), args, constants, warps)
    assert fake.counts() == (2, 1)
    fake.launch((1,), args, constants, warps)
    assert fake.counts() == (2, 2)
    assert fake.compiled.launches[-1][3] == 100 + fake.device


def test_launch_hooks_take_tritons_path(fake):
    x = torch.ones(4)
    fake.launch((1,), (x, 5))
    runtime = triton.knobs.runtime
    runtime.launch_enter_hook.add(print)
    try:
        fake.launch((1,), (x, 5))
    finally:
        runtime.launch_enter_hook.remove(print)
    assert fake.counts() == (2, 0)
    chain = runtime.launch_exit_hook
    runtime.launch_exit_hook = print  # a plain function instead of Triton's hook chain
    try:
        fake.launch((1,), (x, 5))
    finally:
        runtime.launch_exit_hook = chain
    assert fake.counts() == (3, 0)
    fake.launch((1,), (x, 5))
    assert fake.counts() == (3, 1)


def test_pre_run_hooks_and_used_globals_take_tritons_path(fake):
    x = torch.ones(4)
    fake.kernel.used_global_vals = {("G", 0): (1, {})}
    fake.launch((1,), (x, 5))
    fake.launch((1,), (x, 5))
    assert fake.counts() == (2, 0)
    fake.kernel.used_global_vals = {}
    fake.launch((1,), (x, 5))
    fake.kernel.pre_run_hooks.append(lambda *args, **kwargs: None)
    fake.launch((1,), (x, 5))
    assert fake.counts() == (4, 0)


@pytest.mark.parametrize("path", ["python", "native"])
def test_other_kernels_always_take_their_own_launch(path):
    calls = []

    class Interpreted:
        pre_run_hooks = []

        def __getitem__(self, grid):
            return lambda *args, **kwargs: calls.append((grid, args, kwargs))

    launch = generated._launch_python if path == "python" else generated._native_launch(
        _native_module(), lambda: 0, lambda device: 100)
    kernel = Interpreted()
    for _ in range(2):
        launch(kernel, (2,), (7,), (16,), 4, 2)
    assert calls == [((2,), (7, 16), {"num_warps": 4, "num_stages": 2})] * 2


class CudaLauncher:
    """Stands in for Triton 3.6's CUDA launcher: `launch` is its C function, calling it its wrapper."""

    launch_cooperative_grid = False
    launch_pdl = True
    profile_scratch_size = 0

    def __init__(self, global_scratch_size):
        self.global_scratch_size = global_scratch_size
        self.c_launches, self.wrapped = [], []

    def launch(self, *args):
        self.c_launches.append(args)

    def __call__(self, *args):
        self.wrapped.append(args)


@pytest.mark.parametrize("scratch", [0, 128])
def test_the_cuda_launchers_c_function_is_called_without_scratch(fake, monkeypatch, scratch):
    monkeypatch.setattr(generated, "_C_LAUNCH_LAYOUT", True)
    launcher = CudaLauncher(scratch)
    fake.compiled.run = launcher
    x = torch.ones(4)
    fake.launch((3,), (x, 5))
    fake.launch((3,), (x, 5))
    if scratch:
        assert launcher.c_launches == [] and launcher.wrapped[0][:9] == (
            3, 1, 1, 100, "function", ("metadata",), None, None, None)
        return
    assert launcher.wrapped == []
    (args,) = launcher.c_launches
    assert args[:13] == (3, 1, 1, 100, "function", False, True, None, None, ("metadata",), None, None, None)
    assert args[13] is x and args[14:] == (5, 16)


def test_host_helpers_match_triton():
    for a in range(0, 70):
        assert generated._next_power_of_2(a) == triton.next_power_of_2(a)
        for b in (1, 2, 16, 64):
            assert generated._cdiv(a, b) == triton.cdiv(a, b)


class Source:
    """What a compiled kernel's `src` holds: its parameters' Triton types, in signature order."""

    signature = {"x": "*bf16", "n": "i32", "m": "i64", "eps": "fp32", "flag": "i1", "BLOCK": "constexpr"}


@pytest.mark.parametrize("change", [None, "scratch", "pdl", "cluster", "tensordesc", "count"])
def test_the_native_descriptor_of_a_plain_cuda_kernel(monkeypatch, change):
    monkeypatch.setattr(generated, "_C_LAUNCH_LAYOUT", True)
    monkeypatch.setattr(generated, "_native", _native_module())  # built: no rebinding of _launch here
    compiled = Compiled()
    compiled.run = CudaLauncher(128 if change == "scratch" else 0)
    compiled.run.launch_pdl = change == "pdl"
    compiled.function = 0x7F00_1234_5678
    compiled.packed_metadata = (4, 2 if change == "cluster" else 1, 1056)
    compiled.src = Source()
    if change == "tensordesc":
        compiled.src.signature = {**Source.signature, "x": "tensordesc<bf16[16, 16]>"}
    descriptor = generated._native_descriptor(compiled, 7 if change == "count" else 6)
    if change is not None:
        assert descriptor is None
        return
    assert descriptor == (0x7F00_1234_5678).to_bytes(8, "little") + (128).to_bytes(4, "little") + \
        (1056).to_bytes(4, "little") + (6).to_bytes(4, "little") + b"p48f1c"
