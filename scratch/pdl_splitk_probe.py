"""Probe: the decode matmul's split-K finish as a second kernel under a programmatic dependent
launch (PDL, `launch_pdl=True`; Triton 3.6's `gdc_wait`/`gdc_launch_dependents`), against the
same hand-written split-K loop finished in-kernel by the last piece to arrive (the library's
scheme, kernels_src/matmul.py), the two kernels launched plainly, the library and cuBLAS.

Variants of one (tile, pieces, warps, stages) config:
- fused: each piece stores its fp32 partial; the last to arrive (acq_rel counter) sums the
  pieces in order, stores the output and resets the counter;
- two_kernels: the pieces store partials and stop; a flat sum kernel adds them and casts;
- pdl: the same two kernels, the sum kernel launched with PDL: its programs become resident while
  the loop's last programs run (the loop signals `gdc_launch_dependents` at its start) and wait in
  `gdc_wait` for the loop's grid to finish;
- pdl_at_exit: the same, the loop not signalling: the sum kernel launches as the loop's programs
  exit (the implicit trigger), so its waiting programs hold no slots while the loop runs;
- partials_only: the loop alone (what the finish costs, by difference).
Timing: benchmarks.timing.Timer.device_rounds (CUDA events, L2 write-flushed, 5 alternating
rounds), one process. Errors against float64 printed per variant.
Run: python3 scratch/pdl_splitk_probe.py  (writes $OUT/pdl_splitk_probe.json)"""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
import helion_kernels as hk
from benchmarks.timing import Timer

SHAPES = [(16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096), (128, 11008, 4096)]
# (block_m, block_n, block_k, pieces, warps, stages)
CONFIGS = [(16, 64, 256, 2, 4, 3), (64, 64, 256, 2, 4, 3), (64, 128, 128, 4, 4, 4), (64, 128, 256, 2, 4, 3),
           (64, 64, 128, 4, 4, 5), (64, 256, 64, 8, 8, 4), (64, 128, 64, 4, 4, 6),
           (128, 64, 128, 2, 4, 4), (128, 128, 128, 4, 8, 4), (128, 128, 64, 2, 8, 5)]
SUM_BLOCK = 1024


@triton.jit
def splitk_loop(a, b, out, partial, arrivals, M, N, K, k_chunk, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, PIECES: tl.constexpr, FINISH: tl.constexpr, SIGNAL: tl.constexpr):
    if SIGNAL:
        gdc_launch_dependents()
    pid_mn = tl.program_id(0)
    piece = tl.program_id(1)
    tiles_n = tl.cdiv(N, BN)
    pid_m = pid_mn // tiles_n
    pid_n = pid_mn % tiles_n
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    k_begin = piece * k_chunk
    k_end = tl.minimum(k_begin + k_chunk, K)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(k_begin, k_end, BK):
        ks = k0 + tl.arange(0, BK)
        x = tl.load(a + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < k_end), other=0.0)
        w = tl.load(b + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < k_end) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(partial + piece * M * N + rows[:, None] * N + cols[None, :], acc, mask=inside)
    if FINISH:
        arrived = tl.atomic_add(arrivals + pid_mn, 1, sem="acq_rel")
        if arrived == PIECES - 1:
            total = tl.zeros([BM, BN], dtype=tl.float32)
            for p in tl.static_range(PIECES):
                total += tl.load(partial + p * M * N + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
            tl.store(out + rows[:, None] * N + cols[None, :], total.to(out.dtype.element_ty), mask=inside)
            tl.atomic_xchg(arrivals + pid_mn, 0, sem="relaxed")


@triton.jit
def splitk_sum(partial, out, numel, PIECES: tl.constexpr, BLOCK: tl.constexpr, WAIT: tl.constexpr):
    if WAIT:
        gdc_wait()
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < numel
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for p in tl.static_range(PIECES):
        total += tl.load(partial + p * numel + offsets, mask=inside, other=0.0)
    tl.store(out + offsets, total.to(out.dtype.element_ty), mask=inside)


def variant_fns(a, b, config):
    """{variant: callable returning the output} for one config."""
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk, pieces, warps, stages = config
    k_chunk = triton.cdiv(triton.cdiv(k, pieces), bk) * bk
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    partial = torch.empty((pieces, m, n), device=a.device, dtype=torch.float32)
    arrivals = torch.zeros(tiles, device=a.device, dtype=torch.int32)
    loop_grid = (tiles, pieces)
    sum_grid = (triton.cdiv(m * n, SUM_BLOCK),)
    common = dict(BM=bm, BN=bn, BK=bk, PIECES=pieces, num_warps=warps, num_stages=stages)

    def loop(out, finish, signal):
        splitk_loop[loop_grid](a, b, out, partial, arrivals, m, n, k, k_chunk, FINISH=finish, SIGNAL=signal, **common)

    def fused():
        out = torch.empty((m, n), device=a.device, dtype=a.dtype)
        loop(out, True, False)
        return out

    def two(pdl, signal):
        def run():
            out = torch.empty((m, n), device=a.device, dtype=a.dtype)
            loop(out, False, signal)
            splitk_sum[sum_grid](partial, out, m * n, PIECES=pieces, BLOCK=SUM_BLOCK, WAIT=pdl, num_warps=4,
                                 launch_pdl=pdl)
            return out
        return run

    def partials_only():
        loop(partial, False, False)
        return None

    return {"fused": fused, "two_kernels": two(False, False), "pdl": two(True, True),
            "pdl_at_exit": two(True, False), "partials_only": partials_only}


def main():
    device = torch.device("cuda")
    timer = Timer(device)
    rows = []
    for m, n, k in SHAPES:
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device=device, dtype=torch.bfloat16, generator=g) / k ** 0.5
        ref = torch.mm(a.double(), b.double())
        fns = {"library": lambda: hk.matmul(a, b), "cublas": lambda: torch.mm(a, b)}
        errors = {}
        for config in CONFIGS:
            if config[0] > 16 and m == 16 or config[0] == 16 and m != 16:
                continue
            try:
                for name, fn in variant_fns(a, b, config).items():
                    result = fn()
                    torch.cuda.synchronize()
                    label = f"{name} {config}"
                    if result is not None:
                        errors[label] = (result.double() - ref).abs().max().item()
                    fns[label] = fn
            except Exception as error:  # past the GPU's resources: reported, skipped
                print(json.dumps({"shape": [m, n, k], "config": config, "error": str(error)[:200]}), flush=True)
        times = timer.device_rounds(fns, rounds=5)
        us = {label: statistics.median(v) for label, v in times.items()}
        row = {"shape": [m, n, k], "us": us, "max_err": errors,
               "library_config": dict(hk.explain(hk.matmul, a, b).forward[0].config)}
        for label, value in sorted(us.items(), key=lambda item: item[1]):
            print(f"{m}x{n}x{k} {label:40s} {value:8.2f} us  err {errors.get(label, '')}", flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "pdl_splitk_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
