"""The native launch's allocation (native_launch's new_empty through libtorch's C shim): the tensors
it returns have torch's sizes, strides, dtype and device for every form the launchers use; what it
does not allocate itself (subclasses, a replaced Tensor.new_empty, invalid sizes) goes to torch,
errors included; bound into a generated module, its launchers' outputs are right. Runs on CPU
tensors (the C source compiled here, as on a GPU host); tests/runtime/test_native_launch.py checks
CUDA tensors on the GPU."""
import functools

import pytest
import torch

import helion_kernels as hk
from helion_kernels._generated import softmax as generated


@functools.cache
def _new_empty():
    native = generated._build_native()
    assert native is not None, "the native launch's C source did not build"
    new_empty = generated._native_new_empty(native)
    assert new_empty is not None, "libtorch's C shim or THPVariable_Wrap was not found"
    return new_empty


def _same_tensor_kind(got, want):
    assert type(got) is type(want)
    assert (got.shape, got.stride(), got.dtype, got.device, got.requires_grad, got.layout) == \
        (want.shape, want.stride(), want.dtype, want.device, want.requires_grad, want.layout)


@pytest.mark.parametrize("sizes", [(5,), (5, 3), (2, 3, 4), (1, 7, 1), ((2, 3),), (torch.Size([4, 2]),), (0,), (3, 0),
                                   ((),), ((1,) * 16,)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.int32, torch.int64, torch.bool])
def test_new_empty_matches_torch(sizes, dtype):
    x = torch.randn(6, 7, dtype=torch.bfloat16)
    got = _new_empty()(x, dtype, *sizes)
    _same_tensor_kind(got, x.new_empty(*sizes, dtype=dtype))
    got.fill_(1)  # its memory is its own and writable
    assert bool((got == 1).all())


@pytest.mark.parametrize("like", ["transposed", "requires grad", "parameter", "zero-size"])
def test_the_tensor_gives_only_the_device(like):
    base = torch.randn(4, 6)
    t = {"transposed": base.t(), "requires grad": base.requires_grad_(), "parameter": torch.nn.Parameter(base),
         "zero-size": base[:0]}[like]
    _same_tensor_kind(_new_empty()(t, torch.float32, 3, 2), t.new_empty(3, 2, dtype=torch.float32))


@pytest.mark.parametrize("sizes", [(-1,), (3, -2), (2.0,), (True,), ([2, 3],), (), ((1,) * 17,), ((2, "a"),),
                                   (2 ** 40, 2 ** 40), (2 ** 62, 4)])
def test_other_sizes_raise_or_allocate_as_torch_does(sizes):
    x = torch.randn(2, 3)
    try:
        want = x.new_empty(*sizes, dtype=torch.float32)
    except Exception as error:  # noqa: BLE001 - whatever torch raises, the native call raises too
        with pytest.raises(type(error)):
            _new_empty()(x, torch.float32, *sizes)
    else:
        _same_tensor_kind(_new_empty()(x, torch.float32, *sizes), want)


def test_without_the_libraries_loaded_there_is_no_native_allocation():
    native = generated._build_native()
    assert native.alloc_init("/nonexistent/libtorch_cpu.so", "/nonexistent/libtorch_python.so") is None


def test_a_dtype_the_shim_does_not_name_goes_to_torch():
    x = torch.randn(2, 3)
    _same_tensor_kind(_new_empty()(x, torch.float8_e4m3fn, 4), x.new_empty(4, dtype=torch.float8_e4m3fn))


class _Traced(torch.Tensor):
    """A subclass that records the torch functions called on it."""

    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_subclass_goes_to_torch():
    t = torch.randn(3, 4).as_subclass(_Traced)
    _Traced.calls.clear()
    assert type(_new_empty()(t, torch.float32, 2)) is _Traced
    assert "new_empty" in _Traced.calls


def test_a_replaced_new_empty_is_called(monkeypatch):
    real, calls = torch.Tensor.new_empty, []
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    x = torch.randn(3, 4)
    _same_tensor_kind(_new_empty()(x, torch.float32, 3), real(x, 3, dtype=torch.float32))
    assert calls == [(3,)]


def test_a_torch_function_mode_sees_the_call():
    from torch.overrides import TorchFunctionMode

    class Seen(TorchFunctionMode):
        calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    x = torch.randn(3, 4)
    with Seen():
        got = _new_empty()(x, torch.float32, 5)
    _same_tensor_kind(got, x.new_empty(5, dtype=torch.float32))
    assert Seen.calls == ["new_empty"]


def test_bound_into_a_generated_module_its_launchers_allocate_natively(monkeypatch, poison, device):
    calls = []
    monkeypatch.setattr(generated, "_new_empty", lambda *a: calls.append(a[2:]) or _new_empty()(*a))
    x = torch.randn(3, 1000, dtype=torch.float32, device=device)
    got = hk.softmax(x, dim=-1)
    assert calls == [(3, 1000)]
    torch.testing.assert_close(got.double(), torch.softmax(x.double(), -1), atol=1e-6, rtol=1e-5)
