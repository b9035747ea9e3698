"""Eager autograd (`helion_kernels._eager`): calls that autograd records run the ops' implementations
through a plain torch.autograd.Function, never the custom ops, with the custom ops' values and
gradients; traced calls still take the custom ops; torch.func transforms run PyTorch's functions."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels import _eager
from helion_kernels._ops import attention, matmul, rms_norm, softmax
from runtime_helpers import TOLERANCE, assert_close, double_leaf, grads, randn, uses_kernels_here

OPS = {rms_norm: ("rms_norm_fwd", "rms_norm_bwd"), softmax: ("softmax_fwd", "softmax_bwd"),
       attention: ("attention_fwd", "attention_bwd"), matmul: ("matmul_op", "bmm_op", "linear_op")}


def _cases(device):
    """(name, our function, PyTorch's function, inputs) per op family; float32 so that the
    float64 reference decides the values (products: TF32 on CUDA, checked at bf16 tolerance)."""
    x, w = randn(7, 45, device=device, requires_grad=True), randn(45, device=device, requires_grad=True)
    q = randn(1, 2, 9, 32, device=device, requires_grad=True)
    k, v = (randn(1, 2, 11, 32, device=device, requires_grad=True) for _ in range(2))
    a, b = randn(5, 19, device=device, requires_grad=True), randn(19, 13, device=device, requires_grad=True)
    bias = randn(13, device=device, requires_grad=True)
    return [
        ("rmsnorm", lambda x, w: hk.rmsnorm(x, w, 1e-5), lambda x, w: F.rms_norm(x, (45,), w, 1e-5), (x, w)),
        ("softmax", lambda x: hk.softmax(x, -1), lambda x: torch.softmax(x, -1), (x,)),
        ("sdpa", lambda q, k, v: hk.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v)),
        ("matmul", hk.matmul, torch.matmul, (a, b)),
        ("linear", hk.linear, F.linear, (a, b.t().contiguous().detach().requires_grad_(), bias)),
    ]


def _forbid_custom_ops(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("an eager autograd call went through a custom op")
    for module, names in OPS.items():
        for name in names:
            monkeypatch.setattr(module, name, forbidden)


@pytest.mark.parametrize("case", range(5))
def test_eager_autograd_skips_the_custom_ops(device, monkeypatch, case):
    if not uses_kernels_here(device):
        pytest.skip("the generated Triton does not run here")
    name, ours, theirs, inputs = _cases(device)[case]
    _forbid_custom_ops(monkeypatch)
    out = ours(*inputs)
    grad_out = randn(*out.shape, device=device)
    got = grads(out, inputs, grad_out)
    reference_inputs = [double_leaf(t) for t in inputs]
    expected_out = theirs(*reference_inputs)
    expected = grads(expected_out, reference_inputs, grad_out.double())
    # float32 products use TF32 on CUDA: checked at bfloat16's tolerance there
    rtol, atol = TOLERANCE[torch.bfloat16 if device == "cuda" and name in ("sdpa", "matmul", "linear")
                           else torch.float32]
    for actual, reference in zip((out, *got), (expected_out, *expected)):
        assert actual.dtype == torch.float32
        torch.testing.assert_close(actual.double(), reference, rtol=rtol, atol=atol)


def test_inv_rms_is_not_differentiable(device):
    x, w = randn(3, 8, device=device, requires_grad=True), randn(8, device=device, requires_grad=True)
    out, inv_rms = rms_norm.rms_norm_fwd(x, w, 1e-6, x.dtype)
    assert out.requires_grad and not inv_rms.requires_grad
    function_out, function_inv_rms = rms_norm._RmsNormFunction.apply(x, w, 1e-6, x.dtype)
    assert function_out.requires_grad and not function_inv_rms.requires_grad


def test_eager_needs_plain_untraced_untransformed_calls(monkeypatch):
    x = torch.ones(2, 3)
    assert _eager.eager(x, 1.0, None)
    assert not _eager.eager(x.as_subclass(type("Sub", (torch.Tensor,), {})))
    seen = []
    torch.func.vmap(lambda row: seen.append(_eager.eager(row)) or row)(x)
    assert seen == [False]
    monkeypatch.setattr(_eager, "_is_compiling", lambda: True)  # torch.compiler.is_compiling, bound once
    assert not _eager.eager(x)


def test_call_takes_the_op_when_autograd_records(monkeypatch):
    calls = []
    op = lambda *args: calls.append("op") or args[0]
    impl = lambda *args: calls.append("impl") or args[0]
    x = torch.ones(2, requires_grad=True)
    _eager.call(op, impl, x)
    with torch.no_grad():
        _eager.call(op, impl, x)
    _eager.call(op, impl, x.detach())
    assert calls == ["op", "impl", "impl"]


def test_torch_func_grad_runs_pytorchs_function(device):
    x, w = randn(4, 33, device=device), randn(33, device=device)
    reasons = []

    def loss(x):
        reasons.append(rms_norm.fallback_reason(x, (33,), w))
        return hk.rmsnorm(x, w, 1e-6).square().sum()

    got = torch.func.grad(loss)(x)
    x64 = double_leaf(x.requires_grad_())
    (expected,) = torch.autograd.grad(F.rms_norm(x64, (33,), w.double(), 1e-6).square().sum(), x64)
    assert_close(got, expected, torch.float32)
    assert "torch.func" in reasons[0]
