"""Direct calls (`helion_kernels._direct`): which calls may skip torch.library, plans stored per
exact key and reused, autograd still recorded when needed, and plans giving the full path's values."""
import pytest
import torch
import torch.nn.functional as F
from triton.runtime.errors import OutOfResources

import helion_kernels as hk
from helion_kernels import _direct
from helion_kernels._dispatch import DISPATCHER
from runtime_helpers import assert_close, randn, uses_kernels_here


class Sub(torch.Tensor):
    pass


def test_key_needs_plain_tensors_and_no_autograd(monkeypatch):
    x, w = torch.ones(2, 3), torch.nn.Parameter(torch.ones(3))
    assert _direct.key("f", x) == ("f", x.shape, x.dtype, x.device)
    assert _direct.key("f", x, x) == ("f", x.shape, x.dtype, x.device, x.shape, x.dtype, x.device)
    assert _direct.key("f", x, None, x) == ("f", x.shape, x.dtype, x.device, None, x.shape, x.dtype, x.device)
    assert _direct.key("f", x, w) is None  # w requires grad and grad mode is on
    with torch.no_grad():
        assert _direct.key("f", x, w) is not None
    assert _direct.key("f", x.as_subclass(Sub)) is None
    assert _direct.key("f", x, x.as_subclass(Sub)) is None
    monkeypatch.setattr(_direct, "_is_compiling", lambda: True)  # torch.compiler.is_compiling, bound once
    assert _direct.key("f", x) is None


def test_direct_call_stores_a_plan_and_reuses_it(device, monkeypatch):
    if not uses_kernels_here(device):
        pytest.skip("the generated Triton does not run here")
    DISPATCHER.reload()
    x, w = randn(5, 33, device=device), randn(33, device=device)
    expected = F.rms_norm(x.double(), (33,), w.double(), 1e-5)
    assert_close(hk.rmsnorm(x, w, 1e-5), expected, torch.float32)
    key = _direct.key(hk.rmsnorm, x, w)
    assert key in DISPATCHER.plans
    calls = []
    plan = DISPATCHER.plans[key]
    monkeypatch.setitem(DISPATCHER.plans, key, lambda *args: calls.append(args) or plan(*args))
    assert_close(hk.rmsnorm(x, w, 1e-5), expected, torch.float32)
    assert len(calls) == 1
    DISPATCHER.reload()
    assert not DISPATCHER.plans


def test_autograd_calls_take_the_custom_op_and_get_gradients(device):
    DISPATCHER.reload()
    x = randn(4, 16, device=device, requires_grad=True)
    w = randn(16, device=device, requires_grad=True)
    out = hk.rmsnorm(x, w, 1e-5)
    assert out.grad_fn is not None and not DISPATCHER.plans
    out.sum().backward()
    assert x.grad is not None and w.grad is not None
    with torch.no_grad():
        assert hk.rmsnorm(x, w, 1e-5).grad_fn is None


def test_a_plan_whose_kernel_does_not_fit_is_dropped(device, monkeypatch):
    x = randn(3, 8, device=device)
    key = _direct.key((hk.softmax, -1, None), x)

    def too_big(*args):
        raise OutOfResources(300000, 232448, "shared memory")

    monkeypatch.setitem(DISPATCHER.plans, key, too_big)
    assert_close(hk.softmax(x, -1), torch.softmax(x.double(), -1), torch.float32)
    assert DISPATCHER.plans.get(key) is not too_big


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_plans_match_the_full_path(device, dtype):
    if not uses_kernels_here(device, dtype, uses_dot=True):
        pytest.skip("the generated Triton does not run here")
    DISPATCHER.reload()
    x3, w, b = randn(2, 3, 32, dtype=dtype, device=device), randn(32, dtype=dtype, device=device), \
        randn(16, dtype=dtype, device=device)
    weight, other = randn(16, 32, dtype=dtype, device=device), randn(32, 16, dtype=dtype, device=device)
    calls = {
        "rms_norm": (lambda: hk.rms_norm(x3, [32], w), lambda: F.rms_norm(x3.double(), [32], w.double())),
        "rms_norm_2d": (lambda: hk.rms_norm(x3, (3, 32)), lambda: F.rms_norm(x3.double(), (3, 32))),
        "rmsnorm": (lambda: hk.rmsnorm(x3), lambda: F.rms_norm(x3.double(), (32,))),
        "softmax": (lambda: hk.softmax(x3, -1), lambda: torch.softmax(x3.double(), -1)),
        "softmax_dim": (lambda: hk.softmax(x3, 1), lambda: torch.softmax(x3.double(), 1)),
        "matmul": (lambda: hk.matmul(x3, other), lambda: x3.double() @ other.double()),
        "linear": (lambda: hk.linear(x3, weight), lambda: x3.double() @ weight.double().t()),
        "linear_bias": (lambda: hk.linear(x3, weight, b), lambda: x3.double() @ weight.double().t() + b.double()),
    }
    for name, (ours, reference) in calls.items():
        for _ in range(2):  # the full path, then the plan it stored
            assert_close(ours(), reference().to(dtype), dtype)
    for _ in range(2):  # float32 from the half rows: one kernel, its plan keyed by the dtype argument
        assert_close(hk.softmax(x3, -1, dtype=torch.float32), torch.softmax(x3.double(), -1), torch.float32)
    assert_close(hk.softmax(x3, -1), torch.softmax(x3.double(), -1).to(dtype), dtype)
    assert len(DISPATCHER.plans) == len(calls)  # softmax over a non-last dim keeps the full path
    assert any(key[0] == (hk.rms_norm, (32,)) for key in DISPATCHER.plans)  # a list shape is keyed as a tuple
