"""Probe: which difference between the hand-written warp-specialized attention forward
(scratch/ws_probe.py, right results) and the DSL's generated one under
scratch/attention_ws_dsl.patch (wrong results at [128, 128] and [128, 64] tiles) makes Triton 3.6's
Hopper warp specialization miscompile. One hand-written kernel with switches, each moving it toward
the generated code: FOLD (descriptors built per program over the (batch, head) slice, base pointer
offset by the program's batch and head, instead of one descriptor over all [B*H*S, D] rows),
LSE (the row log-sum-exp stored after the loop), QPTR (q loaded through pointers), SPLIT (the
program id split into query tile, head and batch by division, as the generated code does).
Each variant's max error against a float64 reference, S = 4096 (no tail), bf16, D128.
Run: python3 scratch/ws_bisect_probe.py (writes $OUT/ws_bisect_probe.json)."""
import itertools, json, os, sys
import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, O, L, qk_scale, B, H, S, sb, sh, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
             FOLD: tl.constexpr, LSE: tl.constexpr, QPTR: tl.constexpr, SPLIT: tl.constexpr):
    if SPLIT:
        pid = tl.program_id(0)
        tiles = tl.cdiv(S, BM)
        pid_m = pid % tiles
        h = (pid // tiles) % H
        b = (pid // tiles) // H
    else:
        pid_m = tl.program_id(0)
        h = tl.program_id(1) % H
        b = tl.program_id(1) // H
    rows = B * H * S
    if FOLD:
        q_desc = tl.make_tensor_descriptor(Q + b * sb + h * sh, [S, D], [D, 1], [BM, D])
        k_desc = tl.make_tensor_descriptor(K + b * sb + h * sh, [S, D], [D, 1], [BN, D])
        v_desc = tl.make_tensor_descriptor(V + b * sb + h * sh, [S, D], [D, 1], [BN, D])
        first = 0
    else:
        q_desc = tl.make_tensor_descriptor(Q, [rows, D], [D, 1], [BM, D])
        k_desc = tl.make_tensor_descriptor(K, [rows, D], [D, 1], [BN, D])
        v_desc = tl.make_tensor_descriptor(V, [rows, D], [D, 1], [BN, D])
        first = (b * H + h) * S
    offs_m = pid_m * BM + tl.arange(0, BM)
    if QPTR:
        q = tl.load(Q + b * sb + h * sh + offs_m[:, None] * D + tl.arange(0, D)[None, :], mask=(offs_m < S)[:, None], other=0)
    else:
        q = q_desc.load([first + pid_m * BM, 0])
    row_max = tl.full([BM], float("-inf"), tl.float32)
    row_sum = tl.full([BM], 1.0, tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in tl.range(0, S, BN, warp_specialize=True):
        k = k_desc.load([first + start, 0])
        scores = tl.dot(q, k.T) * qk_scale
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        probs = tl.math.exp2(scores - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(probs, 1)
        v = v_desc.load([first + start, 0])
        acc = tl.dot(probs.to(v.dtype), v, acc * rescale[:, None])
        row_max = new_max
    out = (acc / row_sum[:, None]).to(O.dtype.element_ty)
    tl.store(O + b * sb + h * sh + offs_m[:, None] * D + tl.arange(0, D)[None, :], out, mask=(offs_m < S)[:, None])
    if LSE:
        tl.store(L + (b * H + h) * S + offs_m, (row_max + tl.log2(row_sum)) * 0.6931471805599453, mask=offs_m < S)


def main():
    device = torch.device("cuda")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))
    b, h, s, d = 2, 3, 4096, 128
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device=device, dtype=torch.bfloat16, generator=g) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
    rows = []
    for (bm, bn, stages), fold, lse, qptr, split in itertools.product(
            [(128, 128, 2), (128, 64, 2), (128, 64, 3)], [False, True], [False, True], [False, True], [False, True]):
        out = torch.full_like(q, float("nan"))
        lse_out = torch.empty(b, h, s, device=device, dtype=torch.float32)
        grid = (triton.cdiv(s, bm) * b * h,) if split else (triton.cdiv(s, bm), b * h)
        row = {"tile": [bm, bn, stages], "FOLD": fold, "LSE": lse, "QPTR": qptr, "SPLIT": split}
        try:
            attn_fwd[grid](q, k, v, out, lse_out, d ** -0.5 * 1.4426950408889634, b, h, s, q.stride(0), q.stride(1),
                           D=d, BM=bm, BN=bn, FOLD=fold, LSE=lse, QPTR=qptr, SPLIT=split, num_warps=4,
                           num_stages=stages)
            torch.cuda.synchronize()
            row["max_err"] = (out.double() - ref).abs().max().item()
        except Exception as error:  # a variant Triton cannot compile is reported
            row["error"] = f"{type(error).__name__}: {str(error)[-200:]}"
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "ws_bisect_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
