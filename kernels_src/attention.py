"""Scaled dot-product attention, forward and backward, layout [B, H, S, D] (flash-attention style).

attention_fwd(q, k, v, causal, scale) -> (out, lse)
    Online softmax over key tiles in the exp2 domain (log2(e) folded into the scale); `lse` is the
    natural-log log-sum-exp of the scaled scores per query row, fp32 [B, Hq, Sq]. The running
    maximum is taken over the unscaled scores (times the scale, a row vector) and the scale is
    applied inside the exponential's argument, `exp2(s * scale - max)`: one fused multiply-add per
    score where scaling first costs a multiply and a subtraction (as FlashAttention does).
attention_bwd(grad_out, q, k, v, out, lse, causal, scale) -> (dq, dk, dv)
    FlashAttention-2 in two kernels, written straight into outputs of the input dtype (no atomics,
    no fp32 buffers): first one program per query tile computes delta = sum(grad_out * out, -1)
    (stored for the second kernel) and dq, looping over key tiles; then one program per key tile of
    a kv head computes dk and dv, looping over the query heads of its group and their query tiles
    (scores and dS in transposed, key-major form, so that the P^T dO and dS^T q products need no
    register transpose). P and dS are rounded to the input dtype once before their dots, as
    FlashAttention and cuDNN do (tolerance_bwd says what that costs in accuracy).
Conventions (those of torch.nn.functional.scaled_dot_product_attention):
- causal masks are top-left aligned: query i sees keys j <= i, also when Sq != Sk, so every query
  row sees at least key 0 and no row is fully masked;
- grouped-query attention: k/v have Hkv heads dividing Hq; query head h reads kv head h // (Hq // Hkv);
- zero keys (Sk == 0) give a zero output and lse = -inf, as torch does.
Causal kernels skip key tiles that are fully masked: the forward and the dq kernel run keys before
the query tile's first position without any mask, then the diagonal block (up to the query tile's
end) masked; the dk/dv kernel runs the query tiles overlapping its key tile masked, then the later
ones unmasked. The forward's `diagonal_branch` tunable instead runs all its key tiles in one loop,
the mask under a run-time branch that only the tiles reaching past the query tile's first row
take; the loop ends at the key tile holding the query tile's last row, rounded up to a whole key
tile (the keys past that row are masked anyway), so a query tile that ends inside a key tile (192
rows against 128 keys) runs no ragged last step (H200, 2026-12-02: three groups at B4 H32 S8192
D64, 2,387 -> 2,213 µs). The diagonal tile then runs inside the loop's pipeline (Gluon: its two
dots overlapped with the neighbouring tiles'; H100, 2026-11-28: 1.11x at S1024 D128, 1.02-1.04x at
S4096 and B8 Hkv8 S1024). The forward's `lazy_rescale` tunable keeps a row's running maximum until a key tile
raises some row's by more than RESCALE_SLACK (log2 units), and multiplies the output accumulator
by the rescale factors only in those steps (a branch on the whole tile): the [rows, D] multiply
leaves most steps (FlashAttention-4 decides per warp; here per query tile, in Gluon per warpgroup).
The forward's `row_sum_dot` tunable sums each row's probabilities on the tensor cores instead of
the FP32 pipe: a product of the rounded probabilities with a [N, ROW_SUM_COLUMNS] tile of ones into
an fp32 accumulator rescaled like the output's (every column holds the row's sum), which also makes
the denominator the sum of the very probabilities the numerator multiplied (H200, 2026-12-02:
0.96-1.00x at the D64 entries, where the FP32 pipe turned out not to bound the forward; off).
Programs are launched query (or key) tile fastest, so the programs running together
share one head's k/v (or q/grad_out) in L2.
The head dim is specialized (hl.specialize), so each D gets its own compiled variant.
Out-of-range rows and columns of a tile need no explicit mask: the DSL masks loads, reductions and
the contraction dim of dots by the tiles' bounds; only the causal mask is written out.
Shape keys: B, H (query heads), Hkv, Sq, Sk, D, causal; D and causal must match exactly.
"""
from __future__ import annotations

import math

import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.opspec import OpSpec

from ._inputs import as_float64, element_size, randn, seeded_generator

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# lazy_rescale: how far (log2 units) a tile may raise a row's maximum before the running values are
# rescaled to it; until then probabilities reach at most 2**8 (FlashAttention-4's threshold)
RESCALE_SLACK = 8.0
# row_sum_dot: the width of the ones operand that sums the probabilities (a wgmma's n needs 8 or more;
# 16 keeps the shared-memory tile's rows 32 bytes wide)
ROW_SUM_COLUMNS = 16


@helion.kernel(static_shapes=False)
def attention_fwd(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: hl.constexpr, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    batch, q_heads, q_len, head_dim = q.size()
    kv_heads = k.size(1)
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    group = q_heads // kv_heads
    qk_scale = scale * LOG2E
    block_m = hl.register_block_size(q_len)
    block_n = hl.register_block_size(kv_len)
    diagonal_branch = hl.register_tunable("diagonal_branch", helion.EnumFragment((False, True)))
    lazy_rescale = hl.register_tunable("lazy_rescale", helion.EnumFragment((False, True)))
    row_sum_dot = hl.register_tunable("row_sum_dot", helion.EnumFragment((False, True)))
    out = torch.empty_like(q)
    lse = torch.empty([batch, q_heads, q_len], dtype=torch.float32, device=q.device)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        kv_h = h // group
        q_tile = q[b, h, tile_m, :]
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.full([tile_m], 1.0, dtype=torch.float32)
        if row_sum_dot:
            row_sums = hl.full([tile_m, ROW_SUM_COLUMNS], 1.0, dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        if causal and diagonal_branch:
            unmasked_end = min((tile_m.end + block_n - 1) // block_n * block_n, kv_len)
        elif causal:
            unmasked_end = min(tile_m.begin, kv_len)
        else:
            unmasked_end = kv_len
        for tile_n in hl.tile(0, unmasked_end, block_size=block_n):
            k_tile = k[b, kv_h, tile_n, :]
            scores = hl.dot(q_tile, k_tile.T, out_dtype=torch.float32)
            if causal and diagonal_branch:
                if tile_n.end > tile_m.begin:
                    scores = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], scores, float("-inf"))
            new_max = torch.maximum(row_max, torch.amax(scores, dim=1) * qk_scale)
            if lazy_rescale:
                grows = torch.amax(new_max - row_max) > RESCALE_SLACK
                new_max = torch.where(grows, new_max, row_max)
            probs = torch.exp2(scores * qk_scale - new_max[:, None])
            rescale = torch.exp2(row_max - new_max)
            if not row_sum_dot:
                row_sum = row_sum * rescale + torch.sum(probs, dim=1)
            v_tile = v[b, kv_h, tile_n, :]
            probs_in = probs.to(v_tile.dtype)
            if lazy_rescale:
                if grows:
                    acc = acc * rescale[:, None]
                    if row_sum_dot:
                        row_sums = row_sums * rescale[:, None]
                acc = hl.dot(probs_in, v_tile, acc=acc)
                if row_sum_dot:
                    row_sums = hl.dot(probs_in, hl.full([tile_n, ROW_SUM_COLUMNS], 1.0, dtype=v_tile.dtype), acc=row_sums)
            else:
                acc = hl.dot(probs_in, v_tile, acc=acc * rescale[:, None])
                if row_sum_dot:
                    row_sums = hl.dot(probs_in, hl.full([tile_n, ROW_SUM_COLUMNS], 1.0, dtype=v_tile.dtype), acc=row_sums * rescale[:, None])
            row_max = new_max
        if causal and not diagonal_branch:
            for tile_n in hl.tile(unmasked_end, min(tile_m.end, kv_len), block_size=block_n):
                k_tile = k[b, kv_h, tile_n, :]
                scores = hl.dot(q_tile, k_tile.T, out_dtype=torch.float32)
                scores = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], scores, float("-inf"))
                new_max = torch.maximum(row_max, torch.amax(scores, dim=1) * qk_scale)
                probs = torch.exp2(scores * qk_scale - new_max[:, None])
                rescale = torch.exp2(row_max - new_max)
                if not row_sum_dot:
                    row_sum = row_sum * rescale + torch.sum(probs, dim=1)
                v_tile = v[b, kv_h, tile_n, :]
                probs_in = probs.to(v_tile.dtype)
                acc = hl.dot(probs_in, v_tile, acc=acc * rescale[:, None])
                if row_sum_dot:
                    row_sums = hl.dot(probs_in, hl.full([tile_n, ROW_SUM_COLUMNS], 1.0, dtype=v_tile.dtype), acc=row_sums * rescale[:, None])
                row_max = new_max
        if row_sum_dot:
            row_sum = torch.amax(row_sums, dim=1)
        out[b, h, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
        lse[b, h, tile_m] = (row_max + torch.log2(row_sum)) * LN2
    return out, lse


@helion.kernel(static_shapes=False)
def attention_bwd(
    grad_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: hl.constexpr,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, q_heads, q_len, head_dim = q.size()
    kv_heads = k.size(1)
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    group = q_heads // kv_heads
    qk_scale = scale * LOG2E
    dq_block_m = hl.register_block_size(q_len)
    dq_block_n = hl.register_block_size(kv_len)
    dkv_block_n = hl.register_block_size(kv_len)
    dkv_block_m = hl.register_block_size(q_len)
    dq_diagonal_branch = hl.register_tunable("dq_diagonal_branch", helion.EnumFragment((False, True)))
    dkv_diagonal_branch = hl.register_tunable("dkv_diagonal_branch", helion.EnumFragment((False, True)))
    delta = torch.empty([batch, q_heads, q_len], dtype=torch.float32, device=q.device)
    grad_q = torch.empty_like(q)
    grad_k = torch.empty_like(k)
    grad_v = torch.empty_like(v)
    # dq (and delta, which the dk/dv kernel below reads): one program per query tile.
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[dq_block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        kv_h = h // group
        q_tile = q[b, h, tile_m, :]
        do_tile = grad_out[b, h, tile_m, :]
        row_delta = torch.sum(do_tile.to(torch.float32) * out[b, h, tile_m, :].to(torch.float32), dim=1)
        delta[b, h, tile_m] = row_delta
        lse_log2 = lse[b, h, tile_m] * LOG2E
        acc_q = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        if causal and dq_diagonal_branch:
            unmasked_end = min(tile_m.end, kv_len)
        elif causal:
            unmasked_end = min(tile_m.begin, kv_len)
        else:
            unmasked_end = kv_len
        for tile_n in hl.tile(0, unmasked_end, block_size=dq_block_n):
            k_tile = k[b, kv_h, tile_n, :]
            probs = torch.exp2(hl.dot(q_tile, k_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[:, None])
            if causal and dq_diagonal_branch:
                if tile_n.end > tile_m.begin:
                    probs = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], probs, 0.0)
            grad_probs = hl.dot(do_tile, v[b, kv_h, tile_n, :].T, out_dtype=torch.float32)
            grad_scores = probs * (grad_probs - row_delta[:, None])
            acc_q = hl.dot(grad_scores.to(k_tile.dtype), k_tile, acc=acc_q)
        if causal and not dq_diagonal_branch:
            for tile_n in hl.tile(unmasked_end, min(tile_m.end, kv_len), block_size=dq_block_n):
                k_tile = k[b, kv_h, tile_n, :]
                probs = torch.exp2(hl.dot(q_tile, k_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[:, None])
                probs = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], probs, 0.0)
                grad_probs = hl.dot(do_tile, v[b, kv_h, tile_n, :].T, out_dtype=torch.float32)
                grad_scores = probs * (grad_probs - row_delta[:, None])
                acc_q = hl.dot(grad_scores.to(k_tile.dtype), k_tile, acc=acc_q)
        grad_q[b, h, tile_m, :] = (acc_q * scale).to(grad_q.dtype)
    # dk and dv: one program per key tile of a kv head, looping over the group's query heads.
    for tile_n, tile_h, tile_b in hl.tile([kv_len, kv_heads, batch], block_size=[dkv_block_n, 1, 1]):
        b = tile_b.begin
        kv_h = tile_h.begin
        k_tile = k[b, kv_h, tile_n, :]
        v_tile = v[b, kv_h, tile_n, :]
        acc_k = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        acc_v = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        if causal and dkv_diagonal_branch:
            masked_end = tile_n.begin
        elif causal:
            masked_end = min(tile_n.end, q_len)
        else:
            masked_end = 0
        for head in hl.grid(group):
            h = kv_h * group + head
            if causal and not dkv_diagonal_branch:
                for tile_m in hl.tile(tile_n.begin, masked_end, block_size=dkv_block_m):
                    q_tile = q[b, h, tile_m, :]
                    do_tile = grad_out[b, h, tile_m, :]
                    lse_log2 = lse[b, h, tile_m] * LOG2E
                    probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                    probs_t = torch.where(tile_n.index[:, None] <= tile_m.index[None, :], probs_t, 0.0)
                    acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                    grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                    grad_scores_t = probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])
                    acc_k = hl.dot(grad_scores_t.to(q_tile.dtype), q_tile, acc=acc_k)
            for tile_m in hl.tile(masked_end, q_len, block_size=dkv_block_m):
                q_tile = q[b, h, tile_m, :]
                do_tile = grad_out[b, h, tile_m, :]
                lse_log2 = lse[b, h, tile_m] * LOG2E
                probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                if causal and dkv_diagonal_branch:
                    if tile_m.begin < tile_n.end:
                        probs_t = torch.where(tile_n.index[:, None] <= tile_m.index[None, :], probs_t, 0.0)
                acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                grad_scores_t = probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])
                acc_k = hl.dot(grad_scores_t.to(q_tile.dtype), q_tile, acc=acc_k)
        grad_k[b, kv_h, tile_n, :] = (acc_k * scale).to(grad_k.dtype)
        grad_v[b, kv_h, tile_n, :] = acc_v.to(grad_v.dtype)
    return grad_q, grad_k, grad_v


# ---- inputs ---------------------------------------------------------------------------------

def _qkv(shape, dtype, device, generator):
    batch, q_heads, kv_heads = shape["B"], shape["H"], shape["Hkv"]
    q_len, kv_len, head_dim = shape["Sq"], shape["Sk"], shape["D"]
    q = randn([batch, q_heads, q_len, head_dim], dtype, device, generator)
    k = randn([batch, kv_heads, kv_len, head_dim], dtype, device, generator)
    v = randn([batch, kv_heads, kv_len, head_dim], dtype, device, generator)
    return q, k, v


def _scale(shape) -> float:
    return shape.get("scale", 1.0 / math.sqrt(shape["D"]))


def make_fwd_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    q, k, v = _qkv(shape, dtype, device, generator)
    return q, k, v, bool(shape["causal"]), _scale(shape)


def _causal_hidden(q_len: int, kv_len: int, device) -> torch.Tensor:
    """True where a key is hidden from a query under torch's top-left aligned causal mask."""
    return torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril().logical_not()


def _forward_for_backward(q, k, v, causal, scale):
    """out (input dtype) and lse (fp32) as the forward saves them, computed head by head in fp32
    (on the meta device, whose inputs carry shapes only, their shapes alone)."""
    group = q.size(1) // k.size(1)
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    if q.device.type == "meta":
        return out, lse
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            k32, v32 = k[b, h // group].to(torch.float32), v[b, h // group].to(torch.float32)
            scores = torch.matmul(q[b, h].to(torch.float32), k32.T) * scale
            if causal:
                scores = scores.masked_fill(_causal_hidden(q.size(2), k.size(2), q.device), float("-inf"))
            lse[b, h] = torch.logsumexp(scores, dim=-1)
            out[b, h] = torch.matmul(torch.softmax(scores, dim=-1), v32).to(q.dtype)
    return out, lse


def make_bwd_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    q, k, v = _qkv(shape, dtype, device, generator)
    grad_out = randn(list(q.shape), dtype, device, generator)
    causal, scale = bool(shape["causal"]), _scale(shape)
    out, lse = _forward_for_backward(q, k, v, causal, scale)
    return grad_out, q, k, v, out, lse, causal, scale


# ---- float64 references, head by head so S=16384 fits in memory ------------------------------

def _head_probs(q64, k64, causal, scale, lse64=None):
    """Softmax probabilities of one head (from scratch, or from a given lse as the backward does)."""
    scores = torch.matmul(q64, k64.transpose(-1, -2)) * scale
    if causal:
        scores = scores.masked_fill(_causal_hidden(q64.size(0), k64.size(0), q64.device), float("-inf"))
    if lse64 is None:
        lse64 = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse64[:, None]), lse64


def reference_fwd(q, k, v, causal, scale):
    group = q.size(1) // k.size(1)
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float64, device=q.device)
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            k64, v64 = as_float64((k[b, h // group], v[b, h // group]))
            probs, lse[b, h] = _head_probs(as_float64(q[b, h]), k64, causal, scale)
            out[b, h] = probs @ v64
    return out, lse


def reference_bwd(grad_out, q, k, v, out, lse, causal, scale):
    """Gradients of attention at (q, k, v), from the saved out and lse as the kernel uses them."""
    group = q.size(1) // k.size(1)
    grad_q = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    grad_k = torch.zeros(k.shape, dtype=torch.float64, device=q.device)
    grad_v = torch.zeros(v.shape, dtype=torch.float64, device=q.device)
    delta = (as_float64(grad_out) * as_float64(out)).sum(-1)
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            kv_h = h // group
            q64, k64, v64, do64 = as_float64((q[b, h], k[b, kv_h], v[b, kv_h], grad_out[b, h]))
            probs, _ = _head_probs(q64, k64, causal, scale, as_float64(lse[b, h]))
            grad_v[b, kv_h] += probs.T @ do64
            grad_scores = probs * (do64 @ v64.T - delta[b, h][:, None])
            grad_q[b, h] = grad_scores @ k64 * scale
            grad_k[b, kv_h] += grad_scores.T @ q64 * scale
    return grad_q, grad_k, grad_v


# ---- eager peers at the input dtype (SDPA, which picks torch's fastest backend) ---------------

def baseline_fwd(q, k, v, causal, scale):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                            enable_gqa=q.size(1) != k.size(1))


def baseline_bwd(grad_out, q, k, v, out, lse, causal, scale):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    with torch.enable_grad():
        recomputed = baseline_fwd(q, k, v, causal, scale)
    return torch.autograd.grad(recomputed, (q, k, v), grad_out)


# ---- tolerances and costs ---------------------------------------------------------------------

def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol). Outputs are averages of unit-variance values (magnitudes ~0.03-1); errors come
    from rounding the probabilities and dS to the input dtype before their dots, and the outputs.
    fp32 inputs use TF32 dots on NVIDIA GPUs (fp16's 10-bit mantissa), hence measured on an H200 up to 8e-3 abs."""
    return {torch.bfloat16: (1e-2, 1e-2), torch.float16: (2e-3, 5e-4), torch.float32: (1e-2, 1e-2)}[dtype]


def tolerance_bwd(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for dq/dk/dv: sums of many O(1) terms (p * dO, dS * q, dS * k) whose rounding
    to the input dtype before the dots leaves absolute errors on the scale of the terms, so a
    gradient element that cancels to near zero needs an atol at that scale. bf16 keeps 8 bits of dS,
    as FlashAttention and cuDNN do: a float64 simulation of an outlier case put 1 element in 1e5
    1.5e-2 off, and on the H200 (2026-11-24, bf16 suite shapes) the max errors of dq, dk and dv
    against float64 were at most 1.1x the smaller of SDPA's cuDNN and flash backward errors."""
    return {torch.bfloat16: (1e-2, 2e-2), torch.float16: (2e-3, 2e-3), torch.float32: (2e-2, 2e-2)}[dtype]


def _visible_pairs(shape) -> int:
    q_len, kv_len = shape["Sq"], shape["Sk"]
    if not shape["causal"]:
        return q_len * kv_len
    full_rows = max(q_len - kv_len, 0)
    partial = min(q_len, kv_len)
    return partial * (partial + 1) // 2 + full_rows * kv_len


def cost_fwd(shape, dtype):
    heads, kv_heads = shape["B"] * shape["H"], shape["B"] * shape["Hkv"]
    flops = 4.0 * heads * _visible_pairs(shape) * shape["D"]
    moved = (2 * heads * shape["Sq"] + 2 * kv_heads * shape["Sk"]) * shape["D"] * element_size(dtype)
    return flops, float(moved + 4 * heads * shape["Sq"])


def cost_bwd(shape, dtype):
    heads, kv_heads = shape["B"] * shape["H"], shape["B"] * shape["Hkv"]
    flops = 10.0 * heads * _visible_pairs(shape) * shape["D"]
    moved = (4 * heads * shape["Sq"] + 4 * kv_heads * shape["Sk"]) * shape["D"] * element_size(dtype)
    return flops, float(moved + 4 * heads * shape["Sq"])


def _shape(batch, heads, kv_heads, q_len, kv_len, head_dim, causal):
    return {"B": batch, "H": heads, "Hkv": kv_heads, "Sq": q_len, "Sk": kv_len, "D": head_dim, "causal": causal}


# Prefill at several lengths, both head dims, MHA and GQA, causal and not, one long sequence.
SHAPES = [
    _shape(4, 32, 32, 4096, 4096, 128, False),
    _shape(4, 32, 32, 4096, 4096, 128, True),
    _shape(4, 32, 32, 1024, 1024, 128, True),
    _shape(8, 32, 8, 1024, 1024, 128, True),
    _shape(1, 32, 8, 16384, 16384, 128, True),
    _shape(16, 16, 16, 512, 512, 64, False),
    _shape(4, 32, 32, 2048, 2048, 64, True),
]
EXACT_KEYS = ("D", "causal")
DTYPES = (torch.bfloat16, torch.float16)

OPS = [
    OpSpec(name="attention_fwd", kernel=attention_fwd, make_inputs=make_fwd_inputs, reference=reference_fwd,
           shapes=SHAPES, dtypes=DTYPES, tolerance=tolerance, cost=cost_fwd, exact_keys=EXACT_KEYS,
           baseline=baseline_fwd),
    OpSpec(name="attention_bwd", kernel=attention_bwd, make_inputs=make_bwd_inputs, reference=reference_bwd,
           shapes=SHAPES, dtypes=DTYPES, tolerance=tolerance_bwd, cost=cost_bwd, exact_keys=EXACT_KEYS,
           baseline=baseline_bwd),
]
