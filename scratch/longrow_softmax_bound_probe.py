"""Probe (H200): where the split-row softmax forward's time goes at 256x262144 bf16 (61.5% of copy
in the report). One program per piece of PIECE columns (one tile), its (row, piece) from an atomic
ticket as the shipped kernel; forms, each timed by benchmarks.timing's Timer (L2 flushed):
  read      the piece is read and one float per piece stored (the read floor of this decomposition)
  copy      the piece is read and written back (the copy floor of this decomposition)
  held      full softmax: stats, publish, wait for the row's pieces, write from registers (no re-read)
  reread    as held, but the second walk loads the piece again (the shipped kernel's form, L2 hit)
  held, polled by loads (with sleep)   as held, but the wait polls the row's counter with volatile
            loads (and a 200 ns nanosleep between polls), then reads it once with an acquire atomic
and the public hk.softmax and torch.empty_like + copy_ for scale. Prints microseconds and % of a
copy of the same bytes; writes $OUT/longrow_softmax_bound_probe.json."""
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import Timer  # noqa: E402


@triton.jit
def _pieces(x, out, stats, sync, n, P: tl.constexpr, PIECE: tl.constexpr, FORM: tl.constexpr):
    ticket = tl.atomic_add(sync + 0, 1, sem="relaxed")
    row = ticket // P
    piece = ticket % P
    cols = piece * PIECE + tl.arange(0, PIECE)
    base = row.to(tl.int64) * n
    values = tl.load(x + base + cols).to(tl.float32)
    if FORM == 0:
        tl.store(stats + ticket, tl.sum(values, axis=0))
    elif FORM == 1:
        tl.store(out + base + cols, values.to(out.dtype.element_ty))
    else:
        local_max = tl.max(values, axis=0)
        local_sum = tl.sum(tl.exp(values - local_max), axis=0)
        tl.store(stats + 2 * ticket, local_max)
        tl.store(stats + 2 * ticket + 1, local_sum)
        tl.atomic_add(sync + 1 + row, 1, sem="release")
        if FORM <= 3:
            seen = tl.atomic_add(sync + 1 + row, 0, sem="acquire")
            while seen != P:
                seen = tl.atomic_add(sync + 1 + row, 0, sem="acquire")
        else:
            seen = tl.load(sync + 1 + row, volatile=True)
            while seen != P:
                if FORM == 5:
                    seen = tl.inline_asm_elementwise("nanosleep.u32 200;\n mov.u32 $0, $1;", "=r,r", [seen],
                                                     dtype=tl.int32, is_pure=False, pack=1)
                seen = tl.load(sync + 1 + row, volatile=True)
            tl.atomic_add(sync + 1 + row, 0, sem="acquire")
        others = tl.arange(0, P)
        maxes = tl.load(stats + 2 * (row * P + others))
        sums = tl.load(stats + 2 * (row * P + others) + 1)
        row_max = tl.max(maxes, axis=0)
        inv_sum = 1.0 / tl.sum(sums * tl.exp(maxes - row_max), axis=0)
        if FORM == 3:
            values = tl.load(x + base + cols, eviction_policy="evict_first").to(tl.float32)
        tl.store(out + base + cols, (tl.exp(values - row_max) * inv_sum).to(out.dtype.element_ty))


def main():
    import helion_kernels as hk
    torch.cuda.set_device(0)
    timer = Timer(torch.device("cuda"))

    def medians(fns):
        return {k: statistics.median(v) for k, v in timer.device_rounds(fns, rounds=5).items()}
    rows = []
    m, n = 256, 262144
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    ref = torch.softmax(x.float(), dim=1)
    copy_us = medians({"copy_": lambda: out.copy_(x)})["copy_"]
    for piece, warps in ((8192, 8), (16384, 8), (16384, 16), (4096, 4)):
        p = n // piece
        stats = torch.empty(2 * m * p, device="cuda", dtype=torch.float32)
        sync = torch.zeros(m + 1, device="cuda", dtype=torch.int32)
        fns = {}
        for form, name in enumerate(("read", "copy", "held", "reread", "held, polled by loads", "held, polled by loads with sleep")):
            def fn(form=form):
                sync.zero_()
                _pieces[(m * p,)](x, out, stats, sync, n, P=p, PIECE=piece, FORM=form, num_warps=warps)
            fn()
            if form >= 2:
                torch.cuda.synchronize()
                err = (out.float() - ref).abs().max().item()
                assert err < 1e-5, (name, piece, err)
            fns[name] = fn
        fns["zero_ only"] = lambda: sync.zero_()
        times = medians(fns)
        row = {"piece": piece, "warps": warps, "us": times,
               "% of copy": {k: round(100 * copy_us / v, 1) for k, v in times.items()}}
        print(json.dumps(row), flush=True)
        rows.append(row)
    api = medians({"hk.softmax": lambda: hk.softmax(x, dim=-1)})["hk.softmax"]
    summary = {"copy_ us": copy_us, "hk.softmax us": api, "hk.softmax % of copy": round(100 * copy_us / api, 1)}
    print(json.dumps(summary), flush=True)
    json.dump({"rows": rows, **summary}, open(os.path.join(os.environ.get("OUT", "."), "longrow_softmax_bound_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
