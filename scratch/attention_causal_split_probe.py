"""Probe: the causal attention forward as two kernels, so that the first can be warp-specialized.
Triton 3.6's Hopper warp specialization takes a kernel of one loop only, and the library's causal
forward runs two (the key tiles below the diagonal, then the diagonal). Here:
- kernel 1 is the DSL's warp-specialized non-causal forward (the H100 table's D128 config) with its
  loop ending at min(tile_m.begin, kv_len): every key tile below the diagonal, none masked (whole
  tiles when the key block divides the query block and kv_len); it writes out and lse;
- kernel 2 (hand-written here) takes each query tile's diagonal key tiles, starting its online
  softmax from kernel 1's result (row max = lse in log2 units, row sum = 1, accumulator = out), and
  rewrites out and lse.
Timed (benchmarks.timing.Timer.device_rounds, one process) against the library's causal forward
and SDPA's cuDNN backend; the two-kernel output is checked against the library's.
Run: python3 scratch/attention_causal_split_probe.py"""
import json, math, statistics, sys
sys.path.insert(0, ".")
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import helion_kernels as hk
from benchmarks.timing import Timer
from build_tools.dsl.config import Config
from build_tools.dsl.kernel import load_module
from tools.config_probe import _entry, _spec

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def diagonal(q, k, v, out, lse, q_len, kv_len, heads, group, qk_scale, stride_b, stride_h, stride_s,
             kv_stride_b, kv_stride_h, kv_stride_s, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)
    tiles = tl.cdiv(q_len, BM)
    m_id = pid % tiles
    bh = pid // tiles
    h = bh % heads
    b = bh // heads
    rows = m_id * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    row_ok = rows < q_len
    q_base = q + b * stride_b + h * stride_h
    o_base = out + b * stride_b + h * stride_h
    kv_off = b * kv_stride_b + (h // group) * kv_stride_h
    q_tile = tl.load(q_base + rows[:, None] * stride_s + cols[None, :], mask=row_ok[:, None], other=0)
    acc = tl.load(o_base + rows[:, None] * stride_s + cols[None, :], mask=row_ok[:, None], other=0).to(tl.float32)
    lse_ptr = lse + (b * heads + h) * q_len + rows
    row_max = tl.load(lse_ptr, mask=row_ok, other=float("-inf")) * LOG2E
    row_sum = tl.full([BM], 1.0, tl.float32)
    start = tl.minimum(m_id * BM, kv_len)
    stop = tl.minimum(m_id * BM + BM, kv_len)
    for n0 in tl.range(start, stop, BN):
        keys = n0 + tl.arange(0, BN)
        key_ok = keys < stop
        k_tile = tl.load(k + kv_off + keys[:, None] * kv_stride_s + cols[None, :], mask=key_ok[:, None], other=0)
        scores = tl.dot(q_tile, tl.trans(k_tile)) * qk_scale
        scores = tl.where((keys[None, :] <= rows[:, None]) & key_ok[None, :], scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        probs = tl.exp2(scores - new_max[:, None])
        rescale = tl.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(probs, 1)
        v_tile = tl.load(v + kv_off + keys[:, None] * kv_stride_s + cols[None, :], mask=key_ok[:, None], other=0)
        acc = tl.dot(probs.to(v_tile.dtype), v_tile, acc=acc * rescale[:, None])
        row_max = new_max
    tl.store(o_base + rows[:, None] * stride_s + cols[None, :], (acc / row_sum[:, None]).to(out.dtype.element_ty),
             mask=row_ok[:, None])
    tl.store(lse_ptr, (row_max + tl.log2(row_sum)) / LOG2E, mask=row_ok)


def kernel1_module(table, q, k, v, scale):
    spec = _spec("attention_fwd")
    shape = {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 128, "causal": False}
    config = _entry(table, "attention_fwd", "bfloat16", shape)["config"]
    bound = spec.kernel.bind((q, k, v, False, scale))
    source = bound.to_triton_code(bound.config_spec.normalize(Config(config)))
    loops = source.count("tl.range(0, kv_len, _BLOCK_SIZE_1, warp_specialize=_WARP_SPECIALIZE_0)")
    assert loops == 2, loops
    # the whole-tiles branch (the first of the two) ends at the query tile's begin
    source = source.replace("tl.range(0, kv_len, _BLOCK_SIZE_1, warp_specialize=_WARP_SPECIALIZE_0)",
                            "tl.range(0, tl.minimum(offset_5, kv_len), _BLOCK_SIZE_1, warp_specialize=_WARP_SPECIALIZE_0)", 1)
    assert "offset_5 = 0 + pid_2 * _BLOCK_SIZE_0" in source
    return load_module(source), config["block_sizes"]


def main():
    table = json.load(open("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"))
    timer = Timer(torch.device("cuda"))
    g = torch.Generator(device="cuda").manual_seed(0)
    results = []
    for b, h, hkv, s in ((4, 32, 32, 1024), (4, 32, 32, 2048), (4, 32, 32, 4096), (4, 32, 32, 8192), (8, 32, 8, 1024),
                         (1, 32, 8, 16384)):
        q = torch.randn(b, h, s, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        k, v = (torch.randn(b, hkv, s, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
        scale = 128 ** -0.5
        module, (bm, bn) = kernel1_module(table, q, k, v, scale)

        def two_kernels(bm=bm, bn=bn):
            out, lse = module.attention_fwd(q, k, v, False, scale)
            grid = (triton.cdiv(s, bm) * b * h,)
            diagonal[grid](q, k, v, out, lse, s, s, h, h // hkv, scale * LOG2E.value, q.stride(0), q.stride(1), q.stride(2),
                           k.stride(0), k.stride(1), k.stride(2), BM=bm, BN=64, D=128, num_warps=8, num_stages=2)
            return out, lse

        def kernel1_only():
            return module.attention_fwd(q, k, v, False, scale)

        def library():
            return hk.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=hkv != h)

        def cudnn():
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=hkv != h)

        ref = library().float()
        got = two_kernels()[0].float()
        err = (got - ref).abs().max().item()
        times = timer.device_rounds({"library": library, "two kernels": two_kernels, "kernel 1 only": kernel1_only,
                                     "cudnn": cudnn}, rounds=7)
        med = {name: statistics.median(t) for name, t in times.items()}
        row = {"B": b, "H": h, "Hkv": hkv, "S": s, "max_diff_vs_library": err,
               **{name: round(t, 1) for name, t in med.items()},
               "two kernels x library": round(med["library"] / med["two kernels"], 3),
               "two kernels x cudnn": round(med["cudnn"] / med["two kernels"], 3)}
        print(json.dumps(row), flush=True)
        results.append(row)
    return results


if __name__ == "__main__":
    main()
