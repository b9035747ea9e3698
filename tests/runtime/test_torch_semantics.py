"""The public functions keep PyTorch's semantics beyond values: autocast's casts, double backward,
the default eps of half-precision RMSNorm, 3-D attention inputs, argument types PyTorch refuses,
F.softmax's positional arguments and nested patches."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels import _autocast
from helion_kernels._backend import ORIGINAL
from runtime_helpers import assert_close, double_leaf, randn

LOWER = torch.bfloat16


def _sdpa_reference(q, k, v, causal):
    """Attention in plain ops (float64 inputs): differentiable twice, unlike PyTorch's fused kernels."""
    groups = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(groups, -3), v.repeat_interleave(groups, -3)
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        keep = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("name", ["linear", "matmul", "sdpa"])
def test_products_compute_in_the_autocast_dtype(device, poison, name):
    x, w, b = randn(5, 24, device=device), randn(16, 24, device=device), randn(16, device=device)
    q, k = randn(1, 2, 9, 16, device=device), randn(1, 2, 11, 16, device=device)
    ours, theirs = {
        "linear": (lambda: hk.linear(x, w, b), lambda: ORIGINAL["linear"](x, w, b)),
        "matmul": (lambda: hk.matmul(x, w.t()), lambda: torch.matmul(x, w.t())),
        "sdpa": (lambda: hk.scaled_dot_product_attention(q, k, k, is_causal=True),
                 lambda: ORIGINAL["scaled_dot_product_attention"](q, k, k, is_causal=True)),
    }[name]
    with torch.autocast(device, dtype=LOWER):
        out, expected = ours(), theirs()
    assert out.dtype == expected.dtype == LOWER
    reference = {"linear": lambda: F.linear(x.to(LOWER).double(), w.to(LOWER).double(), b.to(LOWER).double()),
                 "matmul": lambda: x.to(LOWER).double() @ w.to(LOWER).double().t(),
                 "sdpa": lambda: _sdpa_reference(*(t.to(LOWER).double() for t in (q, k, k)), True)}[name]()
    assert_close(out, reference, LOWER)


def test_explain_follows_autocast_for_the_products(device):
    """Inside an autocast region explain reports the kernels the products run: in the autocast dtype,
    with the backward where the inputs require grad (the casts are described, not made)."""
    x, w = randn(5, 24, device=device, requires_grad=True), randn(16, 24, device=device)
    q = randn(1, 2, 9, 16, device=device)
    with torch.autocast(device, dtype=LOWER):
        explained = [hk.explain(hk.linear, x, w), hk.explain(hk.matmul, x, w.t()),
                     hk.explain(hk.scaled_dot_product_attention, q, q, q, is_causal=True)]
    for e in explained:
        assert {d.dtype for d in e.forward + e.backward} == {"bfloat16"}, str(e)
    assert explained[0].backward and explained[1].backward and not explained[2].backward


def test_patched_modules_follow_autocast(device):
    layer = torch.nn.Linear(24, 16, device=device)
    x = randn(3, 24, device=device)
    with torch.autocast(device, dtype=LOWER), hk.patch():
        out = layer(x)
    assert out.dtype == LOWER
    assert_close(out, F.linear(*(t.to(LOWER).double() for t in (x, layer.weight, layer.bias))), LOWER)


def test_row_ops_follow_the_autocast_policy_of_their_device(device, monkeypatch):
    """On CPU PyTorch's autocast leaves softmax and rms_norm alone; on CUDA it runs rms_norm in float32
    and softmax with dtype float32 unless one is given: emulated here by the table of which device
    autocasts which op."""
    x = randn(4, 40, dtype=LOWER, device=device, requires_grad=True)
    weight = randn(40, dtype=LOWER, device=device)
    with torch.autocast(device, dtype=LOWER):
        assert hk.softmax(x, -1).dtype == F.softmax(x, -1).dtype
        assert hk.rms_norm(x, [40], weight).dtype == F.rms_norm(x, [40], weight).dtype
    for name in ("softmax", "rms_norm"):
        monkeypatch.setitem(_autocast._AUTOCASTS, (name, device), True)
    with torch.autocast(device, dtype=LOWER):
        probs, normed = hk.softmax(x, -1), hk.rms_norm(x, [40], weight)
        assert hk.softmax(x, -1, dtype=LOWER).dtype == LOWER and hk.rmsnorm(x).dtype == torch.float32
        explained = [hk.explain(hk.softmax, x, -1), hk.explain(hk.rms_norm, x, [40], weight)]
    # explain follows the region: the bf16 rows read as they are, float32 written
    assert [e.forward[0].dtypes for e in explained] == ["out_dtype=float32", "out_dtype=float32"]
    assert probs.dtype == normed.dtype == torch.float32
    x64 = double_leaf(x)
    assert_close(probs, F.softmax(x64, -1), torch.float32)
    assert_close(normed, F.rms_norm(x64, [40], weight.double(), eps=torch.finfo(torch.float32).eps), torch.float32)
    (probs.sum() + normed.square().sum()).backward()
    assert x.grad.dtype == LOWER


def _second_order(function, inputs):
    """d/d(inputs) of the squared norm of d(weighted output sum)/d(inputs): a gradient of gradients."""
    out = function(*inputs)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=out.device).view(out.shape)
    first = torch.autograd.grad((out * weights).sum(), inputs, create_graph=True)
    return torch.autograd.grad(sum(g.square().sum() for g in first), inputs)


EPS32 = torch.finfo(torch.float32).eps
DOUBLE_BACKWARD = {
    "softmax": ((lambda x: hk.softmax(x, 0), lambda x: F.softmax(x, 0)), [(37, 5)]),
    "rms_norm": ((lambda x, w: hk.rms_norm(x, [37], w), lambda x, w: F.rms_norm(x, [37], w, eps=EPS32)),
                 [(5, 37), (37,)]),
    "rms_norm no weight": ((lambda x: hk.rmsnorm(x), lambda x: F.rms_norm(x, [37], eps=EPS32)), [(3, 5, 37)]),
    "attention causal": ((lambda q, k, v: hk.scaled_dot_product_attention(q, k, v, is_causal=True),
                          lambda q, k, v: _sdpa_reference(q, k, v, True)), [(1, 2, 9, 16), (1, 2, 9, 16), (1, 2, 9, 16)]),
    "attention grouped": ((lambda q, k, v: hk.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                           lambda q, k, v: _sdpa_reference(q, k, v, False)), [(1, 4, 7, 16), (1, 2, 9, 16), (1, 2, 9, 16)]),
}


@pytest.mark.parametrize("case", list(DOUBLE_BACKWARD))
def test_double_backward(device, case):
    # float32 attention on CUDA runs PyTorch's fused kernels (no TF32), which have no double backward
    dtype = torch.bfloat16 if device == "cuda" and case.startswith("attention") else torch.float32
    tolerance = 1e-4 if dtype == torch.float32 else 5e-2
    (ours, reference), shapes = DOUBLE_BACKWARD[case]
    inputs = [randn(*shape, dtype=dtype, device=device, requires_grad=True) for shape in shapes]
    got = _second_order(ours, inputs)
    expected = _second_order(reference, [double_leaf(t) for t in inputs])
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.double(), e, rtol=tolerance, atol=tolerance * e.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_rms_norm_defaults_to_the_float32_eps(device, dtype):
    """eps=None means the epsilon of the type PyTorch computes in (float32), not the input's."""
    x = randn(6, 64, dtype=dtype, device=device) * 0.01
    weight = randn(64, dtype=dtype, device=device)
    expected = F.rms_norm(x.double(), [64], weight.double(), eps=EPS32)
    assert_close(hk.rms_norm(x, [64], weight), expected, dtype)
    assert_close(hk.rmsnorm(x, weight), expected, dtype)
    assert_close(hk.nn.RMSNorm(64, device=device, dtype=dtype)(x), F.rms_norm(x.double(), [64], eps=EPS32), dtype)


@pytest.mark.parametrize("kv_batch, gqa", [(1, False), (2, True), (4, False)])
def test_three_dimensional_attention_takes_its_first_dim_as_pytorch_does(device, poison, kv_batch, gqa):
    """[N, L, E] inputs: PyTorch broadcasts a key/value N of 1 and groups N as heads under enable_gqa."""
    q, k, v = randn(4, 8, 16, device=device), randn(kv_batch, 8, 16, device=device), randn(kv_batch, 8, 16, device=device)
    out = hk.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
    groups = 4 // kv_batch if gqa else 1
    k64, v64 = (t.double().repeat_interleave(groups, 0).expand(4, 8, 16) for t in (k, v))
    assert_close(out, _sdpa_reference(q.double(), k64, v64, False), torch.float32)


def test_three_dimensional_attention_with_unmatched_dims_raises_as_pytorch_does(device):
    q, k = randn(2, 8, 16, device=device), randn(3, 8, 16, device=device)
    with pytest.raises(RuntimeError):
        ORIGINAL["scaled_dot_product_attention"](q, k, k)
    with pytest.raises(RuntimeError):
        hk.scaled_dot_product_attention(q, k, k)


def test_an_int_normalized_shape_is_refused_as_pytorch_does(device):
    x = randn(3, 8, device=device)
    with pytest.raises(TypeError):
        F.rms_norm(x, 8)
    with pytest.raises(TypeError):
        hk.rms_norm(x, 8)


def test_softmax_takes_f_softmax_positional_arguments(device):
    x = randn(3, 7, device=device)
    assert_close(hk.softmax(x, 1, 3), F.softmax(x.double(), 1), torch.float32)
    assert hk.softmax(x, 1, 3, torch.float64).dtype == torch.float64


def test_a_nested_patch_leaves_the_outer_one_in_place():
    with hk.patch():
        with hk.patch():
            assert hk._patch.is_patched()
        assert hk._patch.is_patched()
    assert F.linear is ORIGINAL["linear"] and not hk._patch.is_patched()
