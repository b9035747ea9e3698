"""Where the split-row softmax forward loses time: hand-written variants of the kernel the DSL
generates for `split_rows` (kernels_src/softmax.py), timed side by side on a GPU (an experiment,
not library code; notes/split_rows_h200.md has the numbers).

Variants (constexpr switches): TICKET (work item from an atomic ticket, else from the program id),
WAIT (exchange the pieces' partial results; without it each piece normalizes by its own sums, a
wrong result that shows what the exchange costs), BLOCK (piece width), num_warps.
`python3 scratch/split_rows_variants.py` prints µs and % of a 4.2 TB/s copy per case."""
import torch
import triton
import triton.language as tl

from benchmarks.timing import Timer


@triton.jit
def split_softmax(x, out, piece_max, piece_sum, sync, m, n, pieces,
                  BLOCK: tl.constexpr, PIECES_P2: tl.constexpr, TICKET: tl.constexpr, WAIT: tl.constexpr):
    if TICKET:
        item = tl.atomic_add(sync + m, 1, sem="relaxed")
    else:
        item = tl.program_id(0)
    row = item // pieces
    piece = item % pieces
    cols = piece * BLOCK + tl.arange(0, BLOCK)
    inside = cols < n
    values = tl.load(x + row.to(tl.int64) * n + cols, mask=inside, other=float("-inf")).to(tl.float32)
    local_max = tl.max(values, 0)
    local_sum = tl.sum(tl.exp(values - local_max), 0)
    if WAIT:
        tl.store(piece_max + row * pieces + piece, local_max)
        tl.store(piece_sum + row * pieces + piece, local_sum)
        tl.debug_barrier()
        tl.atomic_add(sync + row, 1, sem="release")
        seen = tl.atomic_add(sync + row, 0, sem="acquire")
        while seen != pieces:
            seen = tl.atomic_add(sync + row, 0, sem="acquire")
        tl.debug_barrier()
        others = tl.arange(0, PIECES_P2)
        maxes = tl.load(piece_max + row * pieces + others, mask=others < pieces, other=float("-inf"))
        sums = tl.load(piece_sum + row * pieces + others, mask=others < pieces, other=0.0)
        row_max = tl.max(maxes, 0)
        row_sum = tl.sum(sums * tl.exp(maxes - row_max), 0)
    else:
        row_max, row_sum = local_max, local_sum
    tl.store(out + row.to(tl.int64) * n + cols, (tl.exp(values - row_max) / row_sum).to(out.dtype.element_ty), mask=inside)


def run(x, block, warps, ticket, wait):
    m, n = x.shape
    pieces = triton.cdiv(n, block)
    out = torch.empty_like(x)
    parts = torch.empty((2, m, pieces), dtype=torch.float32, device=x.device)
    sync = torch.zeros(m + 1, dtype=torch.int32, device=x.device)
    split_softmax[(m * pieces,)](x, out, parts[0], parts[1], sync, m, n, pieces, BLOCK=block,
                                 PIECES_P2=triton.next_power_of_2(pieces), TICKET=ticket, WAIT=wait, num_warps=warps)
    return out


def main():
    timer = Timer(torch.device("cuda"), reps=50, seconds=0.2)
    for m, n in ((4096, 131072), (256, 262144)):
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        reference = torch.softmax(x.float(), -1)
        moved = 2 * x.numel() * x.element_size()
        for block, warps, ticket, wait in [(4096, 4, True, True), (4096, 4, False, True), (4096, 4, True, False),
                                           (4096, 4, False, False), (8192, 8, True, True), (8192, 8, False, True),
                                           (16384, 8, True, True), (16384, 16, True, True), (16384, 16, False, True),
                                           (8192, 4, False, True), (2048, 2, False, True)]:
            if n // block > 128:
                continue
            got = run(x, block, warps, ticket, wait)
            error = (got.float() - reference).abs().max().item() if wait else float("nan")
            us = timer.device_us(lambda: run(x, block, warps, ticket, wait))
            print(f"{m}x{n} block {block:5d} w{warps:2d} ticket {ticket!s:5} wait {wait!s:5} {us:8.1f} us "
                  f"{100 * moved / us / 1e3 / 4220:5.1f}% of copy  max err {error:.2e}", flush=True)


if __name__ == "__main__":
    main()
