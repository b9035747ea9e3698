"""Long-row softmax: pieces of several column tiles whose second pass re-reads the piece from L2
(an experiment, not library code; notes/split_rows_h200.md has the background).

The shipped split-row structure holds a piece of at most 4096 columns in registers while it waits
for the row's other pieces, so the exchange's latency is paid for every 8 KB of a bf16 row. Here a
program owns PIECE columns, walks them in BLOCK-column tiles (pass 1: online max and sum, or the
dot(dy, y) backward), exchanges the partials through global memory (release/acquire counter), then
walks its tiles again (pass 2, loads meant to hit L2, since the piece was read microseconds before)
and writes. HBM traffic is the ideal one read and one write if pass 2 hits; the wait is amortized
over PIECE columns and holds no piece in registers.

`python3 scratch/split_reread_probe.py` prints µs, % of the 1 GiB copy ceiling and of a same-size
copy, and the max error against float32 torch, per shape and variant, with the shipped op first."""
import itertools
import sys

import torch
import triton
import triton.language as tl

from benchmarks.timing import Timer


@triton.jit
def _exchange(sync, row, pieces):
    tl.debug_barrier()
    tl.atomic_add(sync + row, 1, sem="release")
    seen = tl.atomic_add(sync + row, 0, sem="acquire")
    while seen != pieces:
        seen = tl.atomic_add(sync + row, 0, sem="acquire")
    tl.debug_barrier()


@triton.jit
def fwd_reread(x, out, part_max, part_sum, sync, m, n, pieces,
               PIECE: tl.constexpr, BLOCK: tl.constexpr, PIECES_P2: tl.constexpr, STAGES: tl.constexpr,
               EVICT1: tl.constexpr):
    item = tl.atomic_add(sync + m, 1, sem="relaxed")
    row = item // pieces
    piece = item % pieces
    src = x + row.to(tl.int64) * n
    dst = out + row.to(tl.int64) * n
    begin = piece * PIECE
    end = tl.minimum(begin + PIECE, n)
    run_max = -float("inf")
    run_sum = 0.0
    for start in tl.range(begin, end, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        values = tl.load(src + cols, mask=cols < end, other=-float("inf"), eviction_policy=EVICT1).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(values, 0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(values - new_max), 0)
        run_max = new_max
    tl.store(part_max + row * pieces + piece, run_max)
    tl.store(part_sum + row * pieces + piece, run_sum)
    _exchange(sync, row, pieces)
    others = tl.arange(0, PIECES_P2)
    maxes = tl.load(part_max + row * pieces + others, mask=others < pieces, other=-float("inf"))
    sums = tl.load(part_sum + row * pieces + others, mask=others < pieces, other=0.0)
    row_max = tl.max(maxes, 0)
    inv_sum = 1.0 / tl.sum(sums * tl.exp(maxes - row_max), 0)
    for start in tl.range(begin, end, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < end
        values = tl.load(src + cols, mask=inside, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(dst + cols, (tl.exp(values - row_max) * inv_sum).to(out.dtype.element_ty), mask=inside)


@triton.jit
def bwd_reread(dy, y, dx, part_dot, sync, m, n, pieces,
               PIECE: tl.constexpr, BLOCK: tl.constexpr, PIECES_P2: tl.constexpr, STAGES: tl.constexpr,
               EVICT1: tl.constexpr):
    item = tl.atomic_add(sync + m, 1, sem="relaxed")
    row = item // pieces
    piece = item % pieces
    offset = row.to(tl.int64) * n
    begin = piece * PIECE
    end = tl.minimum(begin + PIECE, n)
    dot = 0.0
    for start in tl.range(begin, end, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < end
        a = tl.load(dy + offset + cols, mask=inside, other=0.0, eviction_policy=EVICT1).to(tl.float32)
        b = tl.load(y + offset + cols, mask=inside, other=0.0, eviction_policy=EVICT1).to(tl.float32)
        dot += tl.sum(a * b, 0)
    tl.store(part_dot + row * pieces + piece, dot)
    _exchange(sync, row, pieces)
    others = tl.arange(0, PIECES_P2)
    row_dot = tl.sum(tl.load(part_dot + row * pieces + others, mask=others < pieces, other=0.0), 0)
    for start in tl.range(begin, end, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < end
        a = tl.load(dy + offset + cols, mask=inside, other=0.0, eviction_policy="evict_first").to(tl.float32)
        b = tl.load(y + offset + cols, mask=inside, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(dx + offset + cols, (b * (a - row_dot)).to(dx.dtype.element_ty), mask=inside)


def fwd(x, piece, block, warps, stages, evict1):
    m, n = x.shape
    pieces = triton.cdiv(n, piece)
    out = torch.empty_like(x)
    parts = torch.empty((2, m, pieces), dtype=torch.float32, device=x.device)
    sync = torch.zeros(m + 1, dtype=torch.int32, device=x.device)
    fwd_reread[(m * pieces,)](x, out, parts[0], parts[1], sync, m, n, pieces, PIECE=piece, BLOCK=block,
                              PIECES_P2=triton.next_power_of_2(pieces), STAGES=stages, EVICT1=evict1,
                              num_warps=warps)
    return out


def bwd(grad, y, piece, block, warps, stages, evict1):
    m, n = y.shape
    pieces = triton.cdiv(n, piece)
    out = torch.empty_like(y)
    parts = torch.empty((m, pieces), dtype=torch.float32, device=y.device)
    sync = torch.zeros(m + 1, dtype=torch.int32, device=y.device)
    bwd_reread[(m * pieces,)](grad, y, out, parts, sync, m, n, pieces, PIECE=piece, BLOCK=block,
                              PIECES_P2=triton.next_power_of_2(pieces), STAGES=stages, EVICT1=evict1,
                              num_warps=warps)
    return out


def parse_args():
    import argparse
    parser = argparse.ArgumentParser()
    ints = lambda text: [int(v) for v in text.split(",")]  # noqa: E731
    parser.add_argument("--pieces", type=ints, default=[8192, 16384, 32768])
    parser.add_argument("--blocks", type=ints, default=[1024, 2048, 4096])
    parser.add_argument("--warps", type=ints, default=[4, 8])
    parser.add_argument("--stages", type=ints, default=[2])
    parser.add_argument("--evicts", type=lambda t: ["" if v == "none" else v for v in t.split(",")], default=["evict_last"])
    parser.add_argument("--dirs", default="fwd,bwd")
    parser.add_argument("--shapes", default="4096x131072,2048x262144,256x262144")
    return parser.parse_args()


def main():
    import helion_kernels as hk

    args = parse_args()
    timer = Timer(torch.device("cuda"), reps=60, seconds=0.25)
    big = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")
    big_out = torch.empty_like(big)
    ceiling_gbs = 2 * big.numel() * 2 / timer.device_us(lambda: big_out.copy_(big)) / 1e3
    del big, big_out
    print(f"device {torch.cuda.get_device_name()} copy ceiling {ceiling_gbs:.0f} GB/s", flush=True)
    grid = list(itertools.product(args.pieces, args.blocks, args.warps, args.stages, args.evicts))
    dirs = args.dirs.split(",")
    for shape in args.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        torch.manual_seed(0)
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16) * 2
        y = torch.softmax(x.float(), -1).to(torch.bfloat16)
        dy = torch.randn_like(x)
        ref_f = torch.softmax(x.float(), -1)
        ref_b = y.float() * (dy.float() - (dy.float() * y.float()).sum(-1, keepdim=True))
        copy_src = torch.empty(m * n, dtype=torch.bfloat16, device="cuda")
        copy_dst = torch.empty_like(copy_src)
        same_f = timer.device_us(lambda: copy_dst.copy_(copy_src))
        fwd_bytes, bwd_bytes = 2 * x.numel() * 2, 3 * x.numel() * 2

        def line(kind, label, us, err):
            moved = fwd_bytes if kind == "fwd" else bwd_bytes
            pct = 100 * moved / us / 1e3 / ceiling_gbs
            same = 100 * (same_f * moved / fwd_bytes) / us
            print(f"{m}x{n} {kind} {label:34s} {us:9.1f} us {pct:5.1f}% of copy {same:5.1f}% same-size  err {err:.2e}",
                  flush=True)

        if "fwd" in dirs:
            got = hk.softmax(x, dim=-1)
            line("fwd", "shipped", timer.device_us(lambda: hk.softmax(x, dim=-1)), (got.float() - ref_f).abs().max().item())
        if "bwd" in dirs:
            xs = x.clone().requires_grad_(True)
            ys = hk.softmax(xs, dim=-1)
            line("bwd", "shipped (autograd)", timer.device_us(lambda: torch.autograd.grad(ys, xs, dy, retain_graph=True)),
                 (torch.autograd.grad(ys, xs, dy, retain_graph=True)[0].float()
                  - (ys.float() * (dy.float() - (dy.float() * ys.float()).sum(-1, keepdim=True)))).abs().max().item())
            del xs, ys
        for piece, block, warps, stages, evict1 in grid:
            if block > piece or n // piece > 64:
                continue
            label = f"p{piece} b{block} w{warps} s{stages} {evict1 or 'none'}"
            if "fwd" in dirs:
                err = (fwd(x, piece, block, warps, stages, evict1).float() - ref_f).abs().max().item()
                line("fwd", label, timer.device_us(lambda: fwd(x, piece, block, warps, stages, evict1)), err)
            if "bwd" in dirs:
                err = (bwd(dy, y, piece, block, warps, stages, evict1).float() - ref_b).abs().max().item()
                line("bwd", label, timer.device_us(lambda: bwd(dy, y, piece, block, warps, stages, evict1)), err)
        del x, y, dy, copy_src, copy_dst


if __name__ == "__main__":
    main()
