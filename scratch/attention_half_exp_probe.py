"""Probe: is the attention forward's exp2 a bottleneck that packed half-precision exponentials relieve?

A hand-written non-causal forward in the generated kernel's form (scores scaled into the exp2
domain, row max, exp2, rescale, P rounded to the input dtype before its dot), timed in one process
with the library's forward and cuDNN by the report's timer (benchmarks.timing.Timer.device_rounds).
The probabilities' exponentials come from:
- `fp32`: tl.exp2 on fp32 (ex2.approx.f32, one element per MUFU op: the library's kernel);
- `f16x2`: the fp32 exponent rounded to fp16 and ex2.approx.f16x2 (two elements per op);
- `bf16x2`: the exponent rounded to bf16 and ex2.approx.ftz.bf16x2.
The row sum adds the rounded probabilities in fp32. Errors against a float64 reference at a smaller
shape, beside cuDNN's and the library's.
Run: python3 scratch/attention_half_exp_probe.py   (CUDA GPU, sm_90)"""
import json
import os
import statistics
import sys

sys.path.insert(0, ".")
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch.nn.attention import SDPBackend, sdpa_kernel

import helion_kernels as hk
from benchmarks.timing import Timer

LOG2E = 1.4426950408889634


@triton.jit
def _exp2_f16x2(x):
    return tl.inline_asm_elementwise("ex2.approx.f16x2 $0, $1;", "=r,r", [x.to(tl.float16)],
                                     dtype=tl.float16, is_pure=True, pack=2)


@triton.jit
def _exp2_bf16x2(x):
    return tl.inline_asm_elementwise("ex2.approx.ftz.bf16x2 $0, $1;", "=r,r", [x.to(tl.bfloat16)],
                                     dtype=tl.bfloat16, is_pure=True, pack=2)


@triton.jit
def attention_fwd(q, k, v, o, qk_scale, seq, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
                  EXP: tl.constexpr):
    pid_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq * D
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    q_tile = tl.load(q + base + rows[:, None] * D + dims[None, :])
    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.full([BLOCK_M], 1.0, tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in tl.range(0, seq, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        k_tile = tl.load(k + base + cols[:, None] * D + dims[None, :])
        scores = tl.dot(q_tile, tl.trans(k_tile)) * qk_scale
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        shifted = scores - new_max[:, None]
        if EXP == 0:
            probs = tl.exp2(shifted)
            rounded = probs.to(q.dtype.element_ty)
        elif EXP == 1:
            half = _exp2_f16x2(shifted)
            probs = half.to(tl.float32)
            rounded = half.to(q.dtype.element_ty)
        else:
            half = _exp2_bf16x2(shifted)
            probs = half.to(tl.float32)
            rounded = half.to(q.dtype.element_ty)
        rescale = tl.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(probs, 1)
        v_tile = tl.load(v + base + cols[:, None] * D + dims[None, :])
        acc = tl.dot(rounded, v_tile, acc * rescale[:, None])
        row_max = new_max
    tl.store(o + base + rows[:, None] * D + dims[None, :], (acc / row_sum[:, None]).to(o.dtype.element_ty))


def run(q, k, v, exp, block_m, block_n, warps, stages):
    b, h, s, d = q.shape
    o = torch.empty_like(q)
    attention_fwd[(s // block_m, b * h)](q, k, v, o, d ** -0.5 * LOG2E, s, BLOCK_M=block_m, BLOCK_N=block_n, D=d,
                                         EXP=exp, num_warps=warps, num_stages=stages)
    return o


def cudnn(q, k, v):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v)


VARIANTS = {"fp32": 0, "f16x2": 1, "bf16x2": 2}


def main():
    out = os.environ.get("OUT", ".")
    timer = Timer(torch.device("cuda"))
    results = {}
    for dtype in (torch.bfloat16, torch.float16):
        for d, (block_m, block_n, warps, stages) in ((128, (128, 64, 8, 3)), (64, (128, 64, 8, 4))):
            g = torch.Generator(device="cuda").manual_seed(0)
            small = [torch.randn(1, 4, 1024, d, device="cuda", generator=g).to(dtype) for _ in range(3)]
            ref = F.scaled_dot_product_attention(*(t.double() for t in small))
            errors = {"library": (hk.scaled_dot_product_attention(*small).double() - ref).abs().max().item(),
                      "cudnn": (cudnn(*small).double() - ref).abs().max().item()}
            for label, exp in VARIANTS.items():
                errors[label] = (run(*small, exp, block_m, block_n, warps, stages).double() - ref).abs().max().item()
            q, k, v = (torch.randn(4, 32, 4096, d, device="cuda", generator=g).to(dtype) for _ in range(3))
            fns = {"library": lambda: hk.scaled_dot_product_attention(q, k, v), "cudnn": lambda: cudnn(q, k, v)}
            for label, exp in VARIANTS.items():
                fns[label] = (lambda e: lambda: run(q, k, v, e, block_m, block_n, warps, stages))(exp)
            times = timer.device_rounds(fns, rounds=7)
            medians = {label: statistics.median(t) for label, t in times.items()}
            key = f"{str(dtype).split('.')[-1]} B4 H32 S4096 D{d}"
            results[key] = {"us": medians, "max_abs_error_vs_fp64": errors}
            print(key, flush=True)
            for label, us in sorted(medians.items(), key=lambda item: item[1]):
                print(f"   {label:10s} {us:9.1f} us  {medians['library'] / us:6.3f}x library   "
                      f"max err {errors[label]:.2e}", flush=True)
    with open(os.path.join(out, "attention_half_exp_probe.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
