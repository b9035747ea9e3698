"""torch.library integration: opcheck of every custom op, torch.compile(fullgraph=True) without breaks."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels._ops import attention, matmul, rms_norm, softmax
from runtime_helpers import randn

BF16 = torch.bfloat16


def sample_ops(device):
    """(custom op, args) covering each op with gradients enabled."""
    x = randn(7, 33, device=device, requires_grad=True)
    w = randn(33, device=device, requires_grad=True)
    inv_rms = torch.rsqrt(x.detach().square().mean(-1) + 1e-5)
    y = torch.softmax(randn(7, 33, device=device), -1)
    half = randn(7, 33, dtype=BF16, device=device, requires_grad=True)
    q = randn(1, 2, 9, 16, dtype=BF16, device=device, requires_grad=True)
    kv = randn(1, 1, 12, 16, dtype=BF16, device=device, requires_grad=True)
    out, lse = attention.attention_fwd(q.detach(), kv.detach(), kv.detach(), True, 0.25)
    grad = randn(7, 33, device=device)
    return [
        (rms_norm.rms_norm_fwd, (x, w, 1e-5, x.dtype)),
        (rms_norm.rms_norm_fwd, (x, None, 1e-5, x.dtype)),
        (rms_norm.rms_norm_fwd, (half, w, 1e-5, torch.float32)),
        (rms_norm.rms_norm_fwd, (half, None, 1e-5, torch.float32)),
        (rms_norm.rms_norm_bwd, (grad, x.detach(), w.detach(), inv_rms)),
        (rms_norm.rms_norm_bwd, (grad, half.detach(), w.detach(), inv_rms)),
        (softmax.softmax_fwd, (x, x.dtype)),
        (softmax.softmax_fwd, (half, torch.float32)),
        (softmax.softmax_bwd, (grad, y, y.dtype)),
        (softmax.softmax_bwd, (grad, y, BF16)),
        (matmul.matmul_op, (x, randn(33, 5, device=device, requires_grad=True))),
        (matmul.bmm_op, (randn(2, 3, 4, device=device, requires_grad=True), randn(2, 4, 5, device=device))),
        (matmul.linear_op, (x, randn(6, 33, device=device, requires_grad=True), randn(6, device=device))),
        (attention.attention_fwd, (q, kv, kv, True, 0.25)),
        (attention.attention_bwd, (randn(1, 2, 9, 16, dtype=BF16, device=device), q.detach(), kv.detach(),
                                   kv.detach(), out, lse, True, 0.25)),
    ]


@pytest.mark.parametrize("index", range(12))
def test_opcheck(device, index):
    op, args = sample_ops(device)[index]
    torch.library.opcheck(op, args)


def model(x, w, q, k, v, lin_w):
    h = hk.rmsnorm(x, w)
    h = hk.linear(h, lin_w)
    h = hk.softmax(h, dim=-1)
    h = hk.matmul(h, lin_w)
    attn = hk.scaled_dot_product_attention(q, k, v, is_causal=True)
    return h.sum() + attn.float().sum() + hk.rms_norm(x, [x.shape[-1]]).sum()


def test_compile_fullgraph_forward_and_backward(device):
    torch._dynamo.reset()
    inputs = [randn(5, 16, device=device, requires_grad=True), randn(16, device=device, requires_grad=True),
              randn(1, 2, 9, 16, dtype=BF16, device=device, requires_grad=True),
              randn(1, 2, 9, 16, dtype=BF16, device=device, requires_grad=True),
              randn(1, 2, 9, 16, dtype=BF16, device=device, requires_grad=True),
              randn(24, 16, device=device, requires_grad=True)]
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    got = compiled(*inputs)
    got_grads = torch.autograd.grad(got, inputs)
    want = model(*inputs)
    want_grads = torch.autograd.grad(want, inputs)
    torch.testing.assert_close(got, want)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w)


def test_compile_inductor_with_patched_functional(device):
    torch._dynamo.reset()
    x = randn(4, 32, device=device)
    w = randn(32, device=device)

    def f(x, w):
        return F.softmax(F.rms_norm(x, [32], w), dim=-1)

    with hk.patch():
        compiled = torch.compile(f, fullgraph=True)
        got = compiled(x, w)
    torch.testing.assert_close(got, F.softmax(F.rms_norm(x, [32], w), dim=-1), rtol=1e-5, atol=1e-6)
