"""Probe (H200): a split-row softmax forward whose programs do not idle while a row's pieces arrive.
A persistent grid of G programs loops over atomic tickets (one ticket a piece of PIECE columns, the
shipped kernel's decomposition). In each iteration a program takes ticket t, reads its piece, and
publishes the piece's (max, sum of exp); it then finishes the ticket it took the iteration before
(t', about G tickets behind, whose row is complete by then, so its wait seldom spins): it reads
the row's partials and writes piece t' from a second read of x (from L2: the piece was read one
iteration earlier), which it issued before the new piece's reductions. A program publishes before
it waits, and every ticket taken is published without waiting, so a wait can only block on tickets
no program has taken; with G >= P (pieces a row) resident programs that cannot hold every waiter.
Times (benchmarks.timing's Timer, L2 flushed, 5 alternating rounds) against the shipped
`hk.softmax` and `copy_`; writes $OUT/longrow_softmax_lagged_probe.json."""
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

# (piece, warps, programs per SM); PROBE_PLANS=more runs the second set (more programs an SM)
PLANS = ((8192, 8, 2), (8192, 8, 3), (8192, 8, 4), (4096, 4, 4), (4096, 4, 8), (16384, 16, 1), (16384, 16, 2))
if os.environ.get("PROBE_PLANS") == "more":
    PLANS = ((8192, 8, 4), (8192, 8, 6), (8192, 8, 8), (4096, 4, 8), (4096, 4, 12), (4096, 4, 16), (2048, 2, 16),
             (2048, 2, 24), (4096, 8, 8))


@triton.jit
def _lagged(x, out, stats, sync, n, total, P: tl.constexpr, PIECE: tl.constexpr):
    offsets = tl.arange(0, PIECE)
    prev = tl.program_id(0) * 0 - 1
    while prev < total:
        t = tl.atomic_add(sync + 0, 1, sem="relaxed")
        has_new = t < total
        row = t // P
        cols = (t % P) * PIECE + offsets
        values = tl.load(x + row.to(tl.int64) * n + cols, mask=has_new & (cols < n), other=float("-inf"))
        has_prev = prev >= 0
        prev_row = prev // P
        prev_cols = (prev % P) * PIECE + offsets
        prev_values = tl.load(x + prev_row.to(tl.int64) * n + prev_cols, mask=has_prev & (prev_cols < n),
                              other=0.0, eviction_policy="evict_first")
        if has_new:
            new_values = values.to(tl.float32)
            local_max = tl.max(new_values, axis=0)
            local_sum = tl.sum(tl.exp(new_values - local_max), axis=0)
            tl.store(stats + 2 * t, local_max)
            tl.store(stats + 2 * t + 1, local_sum)
            tl.atomic_add(sync + 1 + row, 1, sem="release")
        if has_prev:
            seen = tl.atomic_add(sync + 1 + prev_row, 0, sem="acquire")
            while seen != P:
                seen = tl.atomic_add(sync + 1 + prev_row, 0, sem="acquire")
            others = tl.arange(0, P)
            maxes = tl.load(stats + 2 * (prev_row * P + others))
            sums = tl.load(stats + 2 * (prev_row * P + others) + 1)
            row_max = tl.max(maxes, axis=0)
            inv_sum = 1.0 / tl.sum(sums * tl.exp(maxes - row_max), axis=0)
            result = tl.exp(prev_values.to(tl.float32) - row_max) * inv_sum
            tl.store(out + prev_row.to(tl.int64) * n + prev_cols, result.to(out.dtype.element_ty), mask=prev_cols < n)
        prev = tl.where(has_new, t, total)


def main():
    import helion_kernels as hk
    torch.cuda.set_device(0)
    timer = Timer(torch.device("cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def medians(fns):
        return {k: statistics.median(v) for k, v in timer.device_rounds(fns, rounds=5).items()}

    results = []
    for m, n in ((256, 262144), (4096, 131072)):
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(x)
        ref = torch.softmax(x.float(), dim=1)
        fns = {"copy_": lambda: out.copy_(x), "hk.softmax": lambda: hk.softmax(x, dim=-1)}
        for piece, warps, per_sm in PLANS:
            p = n // piece
            total = m * p
            stats = torch.empty(2 * total, device="cuda", dtype=torch.float32)
            sync = torch.zeros(m + 1, device="cuda", dtype=torch.int32)
            grid = max(p, sms * per_sm)

            def fn(stats=stats, sync=sync, grid=grid, p=p, total=total, piece=piece, warps=warps):
                sync.zero_()
                _lagged[(grid,)](x, out, stats, sync, n, total, P=p, PIECE=piece, num_warps=warps)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = (out.float() - ref).abs().max().item()
            label = f"lagged {piece} w{warps} {per_sm}/SM"
            if not err < 0.01 * ref.max().item():  # bf16 rounding of the outputs
                print(label, "wrong:", err, flush=True)
                continue
            fns[label] = fn
        fns["zero_ only"] = lambda: sync.zero_()
        times = medians(fns)
        row = {"M": m, "N": n, "us": times, "% of copy": {k: round(100 * times["copy_"] / v, 1) for k, v in times.items()}}
        print(json.dumps(row), flush=True)
        results.append(row)
        del x, out, ref
    json.dump(results, open(os.path.join(os.environ.get("OUT", "."), "longrow_softmax_lagged_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
