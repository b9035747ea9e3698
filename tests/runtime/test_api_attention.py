"""hk.scaled_dot_product_attention against torch (float64 reference), values and gradients."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from runtime_helpers import TOLERANCE, double_leaf, grads, randn, uses_kernels_here

sdpa = hk.scaled_dot_product_attention

# (q shape, kv shape, causal, enable_gqa): odd lengths, one query, Sq != Sk (top-left causal),
# grouped-query heads, 3-D inputs.
CASES = [
    ((1, 2, 37, 16), (1, 2, 37, 16), False, False),
    ((2, 1, 1, 32), (2, 1, 9, 32), False, False),
    ((1, 2, 21, 16), (1, 2, 40, 16), True, False),
    ((1, 2, 40, 16), (1, 2, 21, 16), True, False),
    ((1, 4, 19, 16), (1, 2, 19, 16), True, True),
    ((2, 13, 32), (2, 13, 32), False, False),
]


def check(actual, expected, dtype, scale=1.0):
    rtol, atol = TOLERANCE[dtype]
    assert actual.dtype == dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("q_shape, kv_shape, causal, gqa", CASES)
def test_attention_matches_torch(device, poison, dtype, q_shape, kv_shape, causal, gqa):
    q = randn(*q_shape, dtype=dtype, device=device, requires_grad=True)
    k = randn(*kv_shape, dtype=dtype, device=device, requires_grad=True)
    v = randn(*kv_shape, dtype=dtype, device=device, requires_grad=True)
    report = hk.explain(sdpa, q, k, v, is_causal=causal, enable_gqa=gqa)
    assert report.uses_kernels == uses_kernels_here(device, dtype, uses_dot=True), str(report)
    out = sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)
    leaves64 = [double_leaf(t) for t in (q, k, v)]
    expected = F.scaled_dot_product_attention(*leaves64, is_causal=causal, enable_gqa=gqa)
    check(out, expected, dtype)
    grad_out = randn(*out.shape, dtype=dtype, device=device)
    for got, want in zip(grads(out, (q, k, v), grad_out), grads(expected, leaves64, grad_out.double())):
        check(got, want, dtype, scale=kv_shape[-2] ** 0.5)


def test_explicit_scale_and_float32(device, poison):
    q, k, v = (randn(1, 2, 11, 16, device=device) for _ in range(3))
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=0.3)
    check(sdpa(q, k, v, scale=0.3), expected, torch.float32)


def test_fallbacks_and_reasons(device):
    q, k, v = (randn(1, 2, 6, 16, device=device) for _ in range(3))
    mask = randn(6, 6, device=device) > 0
    torch.testing.assert_close(sdpa(q, k, v, attn_mask=mask), F.scaled_dot_product_attention(q, k, v, mask))
    assert "attn_mask" in str(hk.explain(sdpa, q, k, v, attn_mask=mask))
    torch.manual_seed(0)
    dropped = sdpa(q, k, v, dropout_p=0.5)
    torch.manual_seed(0)
    torch.testing.assert_close(dropped, F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    assert "dropout" in str(hk.explain(sdpa, q, k, v, dropout_p=0.5))
    q64 = q.double()
    torch.testing.assert_close(sdpa(q64, q64, q64), F.scaled_dot_product_attention(q64, q64, q64))
    assert "float64" in str(hk.explain(sdpa, q64, q64, q64))
    v_wide = randn(1, 2, 6, 24, device=device)
    torch.testing.assert_close(sdpa(q, k, v_wide), F.scaled_dot_product_attention(q, k, v_wide))


@pytest.mark.parametrize("make_args, kwargs", [
    (lambda: (randn(1, 4, 5, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)), {}),
    (lambda: (randn(1, 2, 5, 8), randn(1, 2, 5, 4), randn(1, 2, 5, 8)), {}),
    (lambda: (randn(1, 2, 5, 8), randn(1, 2, 5, 8, dtype=torch.float16), randn(1, 2, 5, 8)), {}),
])
def test_invalid_inputs_raise_like_pytorch(make_args, kwargs):
    args = make_args()
    with pytest.raises(Exception) as theirs:
        F.scaled_dot_product_attention(*args, **kwargs)
    with pytest.raises(type(theirs.value)):
        sdpa(*args, **kwargs)
