"""hk.matmul and hk.linear against torch (float64 reference), values and gradients."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from runtime_helpers import TOLERANCE, double_leaf, grads, randn, uses_kernels_here

# 2-D, leading batch dims @ 2-D, batched 3-D @ 3-D; odd sizes and size 1.
MATMUL_CASES = [((1, 1), (1, 1)), ((37, 45), (45, 19)), ((2, 3, 17), (17, 70)), ((3, 20, 33), (3, 33, 9))]


def check(actual, expected, dtype, inner):
    """Products accumulate `inner` terms: the tolerance grows with sqrt(inner)."""
    rtol, atol = TOLERANCE[dtype]
    assert actual.dtype == dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected, rtol=rtol, atol=atol * max(inner, 1) ** 0.5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("a_shape, b_shape", MATMUL_CASES)
def test_matmul_matches_torch(device, poison, dtype, a_shape, b_shape):
    a = randn(*a_shape, dtype=dtype, device=device, requires_grad=True)
    b = randn(*b_shape, dtype=dtype, device=device, requires_grad=True)
    assert hk.explain(hk.matmul, a, b).uses_kernels == uses_kernels_here(device, dtype, uses_dot=True)
    out = hk.matmul(a, b)
    a64, b64 = double_leaf(a), double_leaf(b)
    expected = torch.matmul(a64, b64)
    check(out, expected, dtype, a_shape[-1])
    grad_out = randn(*out.shape, dtype=dtype, device=device)
    da, db = grads(out, (a, b), grad_out)
    da64, db64 = grads(expected, (a64, b64), grad_out.double())
    check(da, da64, dtype, b_shape[-1])
    check(db, db64, dtype, out.numel() // out.shape[-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("x_shape, n", [((1, 1), 1), ((37, 45), 19), ((2, 5, 24), 40), ((24,), 7)])
def test_linear_matches_torch(device, poison, dtype, with_bias, x_shape, n):
    x = randn(*x_shape, dtype=dtype, device=device, requires_grad=True)
    w = randn(n, x_shape[-1], dtype=dtype, device=device, requires_grad=True)
    bias = randn(n, dtype=dtype, device=device, requires_grad=True) if with_bias else None
    assert hk.explain(hk.linear, x, w, bias).uses_kernels == uses_kernels_here(device, dtype, uses_dot=True)
    out = hk.linear(x, w, bias)
    leaves64 = [double_leaf(t) if t is not None else None for t in (x, w, bias)]
    expected = F.linear(*leaves64)
    check(out, expected, dtype, x_shape[-1])
    grad_out = randn(*out.shape, dtype=dtype, device=device)
    got = grads(out, (x, w, bias), grad_out)
    want = grads(expected, leaves64, grad_out.double())
    rows = out.numel() // n
    for g, e, inner in zip(got, want, (n, rows, rows)):
        check(g, e, dtype, inner)


def test_non_contiguous_operands(device, poison):
    a = randn(30, 20, device=device).t()
    b = randn(17, 30, device=device).t()[:, ::2]
    check(hk.matmul(a, b), a.double() @ b.double(), torch.float32, 30)
    w = randn(30, 9, device=device).t()
    check(hk.linear(a, w), F.linear(a.double(), w.double()), torch.float32, 30)


def test_fallbacks(device):
    v = randn(5, device=device)
    m = randn(5, 3, device=device)
    torch.testing.assert_close(hk.matmul(v, m), v @ m)
    assert "vector" in str(hk.explain(hk.matmul, v, m))
    batched = randn(2, 1, 4, 5, device=device)
    torch.testing.assert_close(hk.matmul(batched, randn(3, 5, 2, device=device)).shape, (2, 3, 4, 2))
    assert "broadcast" in str(hk.explain(hk.matmul, batched, randn(3, 5, 2, device=device)))
    d = randn(4, 5, dtype=torch.float64, device=device)
    torch.testing.assert_close(hk.matmul(d, d.t()), d @ d.t())
    assert "float64" in str(hk.explain(hk.linear, d, d))
    empty = torch.empty(0, 5, device=device)
    assert hk.linear(empty, randn(3, 5, device=device)).shape == (0, 3)
    zero_k = hk.matmul(torch.empty(3, 0, device=device), torch.empty(0, 2, device=device))
    torch.testing.assert_close(zero_k, torch.zeros(3, 2, device=device))


@pytest.mark.parametrize("fn, make_args", [
    (torch.matmul, lambda: (randn(3, 4), randn(5, 2))),
    (torch.matmul, lambda: (randn(3, 4), randn(4, 2, dtype=torch.float16))),
    (F.linear, lambda: (randn(3, 4), randn(2, 5))),
    (F.linear, lambda: (randn(3, 4), randn(2, 4), randn(3))),
])
def test_invalid_inputs_raise_like_pytorch(fn, make_args):
    ours = {torch.matmul: hk.matmul, F.linear: hk.linear}[fn]
    args = make_args()
    with pytest.raises(Exception) as theirs:
        fn(*args)
    with pytest.raises(type(theirs.value)):
        ours(*args)
