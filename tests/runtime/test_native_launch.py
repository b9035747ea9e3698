"""On the GPU: the generated modules' native launch (launch_helpers, native_launch) takes over
repeated launches after the first, with Triton's launch not called again; it passes each call's
scalars, pointers and alignment, hands tensors off the GPU to Triton's launch (its error), and
gives way to Triton's path while a launch hook is set. Outputs against float64 references."""
import functools

import pytest
import torch
import triton
from triton.runtime.jit import JITFunction

import helion_kernels as hk
from helion_kernels._generated import rms_norm as gen_rms_norm, softmax as gen_softmax
from helion_kernels._plan import chosen_launcher
from runtime_helpers import TOLERANCE

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
BF16 = torch.bfloat16


def _softmax_ref(x):
    return torch.softmax(x.double(), -1)


def _rmsnorm_ref(x, w, eps):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps) * w.double()


def _close(got, want):
    rtol, atol = TOLERANCE[got.dtype]
    torch.testing.assert_close(got.double(), want, atol=atol, rtol=rtol)


def _no_triton_launches(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Triton's launch was called for a repeated launch")

    monkeypatch.setattr(JITFunction, "run", refuse)


def test_repeated_launches_skip_triton(monkeypatch):
    x = torch.randn(7, 3001, device="cuda", dtype=BF16) * 4
    _close(hk.softmax(x, -1), _softmax_ref(x))
    assert isinstance(gen_softmax._launch, functools.partial) and gen_softmax._launch.func is gen_softmax._native.launch
    entries = [entry for _, launches in gen_softmax._LAUNCHES.values() if launches for entry in launches.values()]
    assert any(entry.__class__ is bytes for entry in entries)
    _no_triton_launches(monkeypatch)
    for _ in range(3):
        x = torch.randn(7, 3001, device="cuda", dtype=BF16) * 4
        out = torch.full_like(x, float("nan"))
        out.copy_(hk.softmax(x, -1))
        _close(out, _softmax_ref(x))


def test_each_call_passes_its_own_scalars_and_pointers(monkeypatch):
    x = torch.randn(5, 4096, device="cuda", dtype=BF16)
    w = torch.randn(4096, device="cuda", dtype=BF16)
    hk.rmsnorm(x, w, 1e-6)
    _no_triton_launches(monkeypatch)
    for eps in (1e-6, 0.25, 3.0):  # a float is one key: its value is packed per call
        x = torch.randn(5, 4096, device="cuda", dtype=BF16)
        w = torch.randn(4096, device="cuda", dtype=BF16)
        _close(hk.rmsnorm(x, w, eps), _rmsnorm_ref(x, w, eps))


def test_alignment_and_dtype_are_new_keys():
    for dtype in (BF16, torch.float16, torch.float32):
        flat = torch.randn(6 * 1000 + 1, device="cuda", dtype=dtype) * 4
        for x in (flat[:-1].view(6, 1000), flat[1:].view(6, 1000)):  # 16-byte aligned, then not
            for _ in range(2):
                _close(hk.softmax(x, -1), _softmax_ref(x))


def test_a_cpu_tensor_gets_tritons_error():
    x = torch.randn(3, 512, device="cuda", dtype=BF16)
    hk.softmax(x, -1)
    launcher = chosen_launcher("softmax_fwd", (3, 512), x)
    launcher(x, x.dtype)
    with pytest.raises(ValueError, match="cpu tensor"):
        launcher(x.cpu(), x.dtype)


def test_a_launch_hook_sees_launches_while_set():
    x = torch.randn(2, 4096, device="cuda", dtype=BF16)
    w = torch.randn(4096, device="cuda", dtype=BF16)
    hk.rmsnorm(x, w, 1e-6)
    seen = []

    def hook(metadata):
        seen.append(metadata.get()["name"])

    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        _close(hk.rmsnorm(x, w, 1e-6), _rmsnorm_ref(x, w, 1e-6))
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    assert seen and all(name.startswith("_rms_norm_fwd") for name in seen)
    count = len(seen)
    hk.rmsnorm(x, w, 1e-6)
    torch.cuda.synchronize()
    assert len(seen) == count
    assert gen_rms_norm._launch.func is gen_rms_norm._native.launch


def test_outputs_are_allocated_natively_once_the_native_launch_is_built(monkeypatch):
    # the module as imported: no native launch yet (other tests may have built it and replaced the
    # allocation they found)
    monkeypatch.setattr(gen_softmax, "_native", None)
    monkeypatch.setattr(gen_softmax, "_LAUNCHES", {})
    monkeypatch.setattr(gen_softmax, "_launch", gen_softmax._launch_python)
    monkeypatch.setattr(gen_softmax, "_new_empty", gen_softmax._new_empty_torch)
    x = torch.randn(3, 4096, device="cuda", dtype=BF16)  # the first launch (Triton's), then the build
    hk.softmax(x, dim=-1)
    new_empty = gen_softmax._new_empty
    assert isinstance(new_empty, functools.partial) and new_empty.func.__name__ == "new_empty"
    y = torch.randn(5, 4096, device="cuda", dtype=BF16)
    _close(hk.softmax(y, dim=-1), _softmax_ref(y))
    for dtype, sizes in ((torch.float32, (7, 3)), (BF16, (5, 4096)), (torch.int32, (0,))):
        got, want = new_empty(y, dtype, *sizes), y.new_empty(*sizes, dtype=dtype)
        assert (got.shape, got.stride(), got.dtype, got.device) == (want.shape, want.stride(), want.dtype, want.device)
