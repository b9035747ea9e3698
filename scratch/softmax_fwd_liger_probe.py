"""Probe: why Liger's softmax forward reads 1.5-2.5% faster than ours at 16384x4096 / 16384x2048 /
4096x16384 (bf16) in the report. One process, benchmarks.timing.Timer.device_rounds (the report's
method), 7 rounds. Timed:
- liger: Liger's `_softmax_single_block_forward_kernel` (one row per program, Liger's warps), raw;
- library: hk.softmax (our generated kernel through the public API);
- variants of one hand-written one-row kernel, each changing one thing from our generated code
  toward Liger's: `fp32` (ours: rows converted to fp32, masked max/sum through tl.where, a
  reciprocal multiply), `other_inf` (the mask folded into the load as other=-inf), `hints` (Liger's
  .ca load / .cs store), `bf16_math` (max and x - max in bf16, as Liger computes), `div` (e / d
  instead of e * (1 / d)), and `liger_like` (all of these);
- our generated code's [1, BLOCK] tile hand-written (`tile`), without its row mask
  (`tile_no_row_mask`), with int64 row offsets (`tile_int64`).
Run: python3 scratch/softmax_fwd_liger_probe.py   (needs the Liger wheel on the path)"""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import triton
import triton.language as tl
import helion_kernels as hk
from benchmarks.timing import Timer
from liger_kernel.ops.softmax import _softmax_single_block_forward_kernel as liger_kernel
from liger_kernel.ops.utils import calculate_settings


@triton.jit
def one_row(y, x, stride, n, BLOCK: tl.constexpr, OTHER_INF: tl.constexpr, HINTS: tl.constexpr,
            BF16_MATH: tl.constexpr, DIV: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    if HINTS:
        raw = tl.load(x + row * stride + cols, mask=mask, other=float("-inf") if OTHER_INF else 0, cache_modifier=".ca")
    else:
        raw = tl.load(x + row * stride + cols, mask=mask, other=float("-inf") if OTHER_INF else 0)
    if BF16_MATH:
        top = tl.max(raw if OTHER_INF else tl.where(mask, raw, float("-inf")), 0)
        e = tl.exp(raw - top)
    else:
        v = raw.to(tl.float32)
        top = tl.max(v if OTHER_INF else tl.where(mask, v, float("-inf")), 0)
        e = tl.exp(v - top)
    total = tl.sum(e if OTHER_INF else tl.where(mask, e, 0), 0)
    out = e / total if DIV else e * (1.0 / total)
    if HINTS:
        tl.store(y + row * stride + cols, out.to(y.dtype.element_ty), mask=mask, cache_modifier=".cs")
    else:
        tl.store(y + row * stride + cols, out.to(y.dtype.element_ty), mask=mask)


@triton.jit
def row_tile(y, x, stride, m, n, BLOCK: tl.constexpr, ROW_MASK: tl.constexpr, WIDE: tl.constexpr):
    """Our generated code's shape: a [1, BLOCK] tile of one row, int32 offsets (int64 with WIDE),
    the row mask (row < m) ANDed into every element's mask when ROW_MASK, tl.where masking."""
    if WIDE:
        rows = tl.program_id(0).to(tl.int64) + tl.arange(0, 1)
    else:
        rows = tl.program_id(0) + tl.arange(0, 1)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n
    mask = ((rows < m)[:, None] & col_mask[None, :]) if ROW_MASK else col_mask[None, :]
    v = tl.load(x + (rows[:, None] * stride + cols[None, :]), mask=mask, other=0).to(tl.float32)
    top = tl.max(tl.where(col_mask[None, :], v, float("-inf")), 1, keep_dims=True)
    e = tl.exp(v - top)
    total = tl.sum(tl.where(col_mask[None, :], e, 0), 1, keep_dims=True)
    tl.store(y + (rows[:, None] * stride + cols[None, :]), (e * (1.0 / total)).to(y.dtype.element_ty), mask=mask)


TILE_VARIANTS = {"tile": {"ROW_MASK": True, "WIDE": False}, "tile_no_row_mask": {"ROW_MASK": False, "WIDE": False},
                 "tile_int64": {"ROW_MASK": True, "WIDE": True}}

VARIANTS = {
    "fp32": {},
    "other_inf": {"OTHER_INF": True},
    "hints": {"HINTS": True},
    "bf16_math": {"BF16_MATH": True, "OTHER_INF": True},
    "div": {"DIV": True},
    "liger_like": {"OTHER_INF": True, "HINTS": True, "BF16_MATH": True, "DIV": True},
}


def main():
    device = torch.device("cuda")
    timer = Timer(device)
    rows = []
    for m, n in ((16384, 4096), (16384, 2048), (4096, 16384)):
        x = torch.randn(m, n, device=device, dtype=torch.bfloat16)
        block, warps = calculate_settings(n)
        y = torch.empty_like(x)

        def liger():
            liger_kernel[(m,)](y, y.stride(0), x, x.stride(0), n, BLOCK_SIZE=block, num_warps=warps)
            return y

        fns = {"library": lambda: hk.softmax(x, dim=-1), "liger": liger}
        for name, flags in VARIANTS.items():
            opts = {"OTHER_INF": False, "HINTS": False, "BF16_MATH": False, "DIV": False, **flags}
            fns[name] = (lambda o: lambda: one_row[(m,)](y, x, x.stride(0), n, BLOCK=block, num_warps=warps, **o) and y)(opts)
        for name, flags in TILE_VARIANTS.items():
            fns[name] = (lambda o: lambda: row_tile[(m,)](y, x, x.stride(0), m, n, BLOCK=block, num_warps=warps, **o) and y)(flags)
        ref = torch.softmax(x.float(), dim=-1)
        errors = {}
        for name, fn in fns.items():
            y.fill_(float("nan"))
            out = fn() if name == "library" else (fn(), y)[1]
            errors[name] = (out.float() - ref).abs().max().item()
        us = {k: statistics.median(v) for k, v in timer.device_rounds(fns, rounds=7).items()}
        row = {"shape": [m, n], "liger_warps": warps, "us": us, "max_abs_err_vs_fp32": errors}
        print(m, n, " ".join(f"{k}={v:.1f}" for k, v in us.items()), flush=True)
        print("   err", {k: f"{v:.2e}" for k, v in errors.items()}, flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "softmax_fwd_liger_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
