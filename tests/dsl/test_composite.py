"""Corpus: larger programs combining features the way model kernels do (attention with online softmax,
cross entropy with flat gathers, layer norm with affine parameters, SwiGLU in half precision, a global
sum through atomics)."""
import math

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randint, randn


@helion.kernel()
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: hl.constexpr) -> torch.Tensor:
    batch_heads, seq_q, head_dim = q.size()
    seq_k = k.size(1)
    head_dim = hl.specialize(head_dim)
    scale = 1.0 / math.sqrt(head_dim)
    out = torch.empty_like(q)
    for tile_b, tile_q in hl.tile([batch_heads, seq_q]):
        row_max = hl.full([tile_b, tile_q], float("-inf"), dtype=torch.float32)
        row_sum = hl.zeros([tile_b, tile_q], dtype=torch.float32)
        acc = hl.zeros([tile_b, tile_q, head_dim], dtype=torch.float32)
        queries = q[tile_b, tile_q, :]
        for tile_k in hl.tile(seq_k):
            scores = torch.bmm(queries, k[tile_b, tile_k, :].transpose(1, 2)) * scale
            if causal:
                visible = tile_k.index[None, None, :] <= tile_q.index[None, :, None]
                scores = torch.where(visible, scores, float("-inf"))
            new_max = torch.maximum(row_max, torch.amax(scores, dim=-1))
            weights = torch.exp(scores - new_max[:, :, None])
            correction = torch.exp(row_max - new_max)
            row_sum = row_sum * correction + weights.sum(dim=-1)
            acc = torch.baddbmm(acc * correction[:, :, None], weights.to(v.dtype), v[tile_b, tile_k, :])
            row_max = new_max
        out[tile_b, tile_q, :] = (acc / row_sum[:, :, None]).to(out.dtype)
    return out


def _attention_reference(q, k, v, causal):
    scores = q @ k.transpose(1, 2) / math.sqrt(q.size(-1))
    if causal:
        scores = scores.masked_fill(~torch.ones_like(scores, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("bh,seq,dim", [(1, 1, 16), (2, 37, 16), (3, 20, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention(bh, seq, dim, causal, device):
    q, k, v = (randn(bh, seq, dim, device=device) for _ in range(3))
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(attention, (q, k, v, causal), _attention_reference, **tolerance)


@helion.kernel()
def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    n, vocab = logits.size()
    losses = torch.empty([n], dtype=torch.float32, device=logits.device)
    logits_flat = logits.view(-1)
    for tile_n in hl.tile(n):
        rows = logits[tile_n, :].to(torch.float32)
        row_max = torch.amax(rows, dim=-1, keepdim=True)
        log_sum = torch.log(torch.sum(torch.exp(rows - row_max), dim=-1)) + row_max.squeeze(-1)
        target = logits_flat[tile_n.index * vocab + labels[tile_n]].to(torch.float32)
        losses[tile_n] = log_sum - target
    return losses


@pytest.mark.parametrize("n,vocab", [(1, 1), (9, 50), (4, 700)])
def test_cross_entropy(n, vocab, device):
    logits, labels = randn(n, vocab, device=device) * 2.0, randint(0, vocab, n, device=device)
    check_kernel(cross_entropy, (logits, labels),
                 lambda x, y: torch.nn.functional.cross_entropy(x, y, reduction="none"))


@helion.kernel()
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        mean = torch.mean(row, dim=-1, keepdim=True)
        centered = row - mean
        variance = torch.mean(centered * centered, dim=-1, keepdim=True)
        normalized = centered * torch.rsqrt(variance + eps)
        out[tile_m, :] = (normalized * weight[None, :].to(torch.float32) + bias[None, :]).to(out.dtype)
    return out


@pytest.mark.parametrize("shape,dtype", [((1, 2), torch.float32), ((7, 65), torch.float16),
                                         ((3, 300), torch.float32)])
def test_layer_norm(shape, dtype, device):
    x = randn(*shape, dtype=dtype, device=device)
    weight, bias = randn(shape[1], dtype=dtype, device=device), randn(shape[1], dtype=dtype, device=device)
    overrides = [{"reduction_loops": [32]}] if shape[1] > 32 else []
    check_kernel(layer_norm, (x, weight, bias, 1e-5),
                 lambda x, w, b, eps: torch.nn.functional.layer_norm(x, (x.size(1),), w, b, eps),
                 overrides=overrides)


@helion.kernel()
def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(gate)
    for tile in hl.tile(gate.size()):
        g = gate[tile].to(torch.float32)
        out[tile] = (g * torch.sigmoid(g) * up[tile].to(torch.float32)).to(out.dtype)
    return out


@pytest.mark.parametrize("shape", [(1,), (3, 45), (2, 3, 11)])
def test_swiglu_half(shape, device):
    gate = randn(*shape, dtype=torch.float16, device=device)
    up = randn(*shape, dtype=torch.float16, device=device)
    check_kernel(swiglu, (gate, up), lambda g, u: torch.nn.functional.silu(g) * u)


@helion.kernel()
def global_sum(x: torch.Tensor) -> torch.Tensor:
    total = torch.zeros([1], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile(x.size()):
        hl.atomic_add(total, [0], x[tile_m, tile_n].to(torch.float32).sum())
    return total


@pytest.mark.parametrize("shape", [(1, 1), (10, 33)])
def test_global_sum_with_atomics(shape, device):
    check_kernel(global_sum, (randn(*shape, device=device),), lambda x: x.sum().reshape(1))
