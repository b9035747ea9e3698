"""Times candidate configs of the matmul-family kernels against cuBLAS on one GPU, in one process run.

`python tools/matmul_sweep.py OUT_DIR [--dry-run] [--deadline SECONDS] [--only op:MxNxK ...]`
Candidates (kernel, config overrides) are listed per shape class below. Phase 1 compiles every
(kernel, config) in 16 spawned processes (filling Triton's on-disk cache); phase 2 times each
candidate per shape with `triton.testing.do_bench` (median, L2 flushed) next to torch's cuBLAS call
and appends one JSON line per measurement to OUT_DIR/sweep.jsonl (checking outputs against cuBLAS).
`--dry-run` cross-compiles every candidate for sm_90 on the CPU instead (build_tools/cross_compile.py).
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import math
import multiprocessing
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tools")]

DEVICE = os.environ.get("SWEEP_DEVICE", "cuda")  # "cpu" with TRITON_INTERPRET=1 checks the flow
TMA = "tensor_descriptor"
TMA_LOADS = "tensor_descriptor loads"  # TMA for the two matrix operands, pointers elsewhere


SMEM = 220 * 1024


def cfg(bm, bn, bk, warps, stages, index="pointer", pid="flat", l2=1, ws=None, evict=None, split=None):
    """Config overrides; `index` applies to every load/store site (the kernel's count is filled in).
    Stages drop until the operand ring buffer fits in shared memory."""
    while stages > 2 and stages * (bm * bk + bk * bn) * 2 > SMEM:
        stages -= 1
    out = {"block_sizes": [bm, bn, bk], "num_warps": warps, "num_stages": stages,
           "pid_type": pid, "l2_groupings": [l2], "indexing": index, "range_warp_specializes": [ws]}
    if evict is not None:
        out["load_eviction_policies"] = evict
    if split is not None:
        out["split_k"] = split
    return out


LARGE = [
    cfg(128, 128, 32, 8, 3),
    cfg(128, 256, 64, 8, 3, l2=8),
    cfg(128, 256, 64, 8, 3, TMA, l2=8),
    cfg(128, 256, 64, 8, 3, TMA, "persistent_interleaved", 8),
    cfg(128, 256, 64, 8, 3, TMA, "persistent_blocked", 8),
    cfg(128, 256, 64, 8, 4, l2=8),
    cfg(128, 256, 64, 8, 3, "block_ptr", l2=8),
    cfg(128, 256, 64, 8, 3, TMA, l2=8, ws=True),
    cfg(128, 128, 64, 4, 4, TMA, l2=8),
    cfg(128, 128, 64, 4, 4, TMA, "persistent_interleaved", 8),
    cfg(128, 128, 64, 4, 4, TMA, l2=8, ws=True),
    cfg(128, 128, 64, 8, 4, TMA, l2=8),
    cfg(256, 128, 64, 8, 3, TMA, l2=8),
    cfg(128, 256, 32, 8, 4, TMA, l2=8),
    cfg(128, 128, 128, 8, 3, TMA, l2=8),
    cfg(128, 256, 64, 8, 3, l2=1),
    cfg(128, 256, 64, 8, 3, TMA, l2=16),
    cfg(128, 256, 64, 8, 3, TMA, l2=4),
    cfg(256, 128, 64, 8, 3, TMA, "persistent_interleaved", 8),
    cfg(128, 256, 64, 8, 3, TMA_LOADS, l2=8),
    cfg(128, 256, 64, 8, 4, TMA_LOADS, l2=8),
]
def decode(m: int) -> list:
    """Candidates for a skinny M: one M tile, narrow N tiles, deep K tiles and pipelines."""
    bm = 16 if m <= 16 else 64
    out = [cfg(64, 64, 32, 4, 3)]
    for bn, bk, stages in ((32, 256, 4), (32, 256, 5), (64, 256, 4), (64, 128, 5), (128, 128, 4), (32, 128, 6)):
        out.append(cfg(bm, bn, bk, 4, stages))
    out += [cfg(bm, 32, 256, 4, 4, TMA), cfg(bm, 64, 256, 4, 4, TMA), cfg(bm, 64, 128, 4, 4, TMA, "persistent_interleaved"),
            cfg(bm, 32, 256, 4, 4, evict=["last", "first"]), cfg(bm, 64, 128, 8, 4), cfg(bm, 32, 256, 2, 4)]
    if m >= 128:
        out += [cfg(128, 64, 128, 4, 4), cfg(128, 64, 128, 8, 4, TMA), cfg(128, 128, 64, 8, 4, TMA), cfg(128, 32, 128, 4, 4)]
    return out


def split_k(m: int, n: int) -> list:
    """matmul's split-K candidates for a skinny M: K cut into 2-8 pieces whose last-arriving program
    sums the fp32 partial tiles (and each tile unsplit). Few stages and small tiles, so that 2-6 programs fit on an SM: each
    piece runs only a few K steps, and its load latency is hidden by the programs beside it (deep
    single-program pipelines measured slower split than unsplit on an H200, 2026-11-24)."""
    if m <= 16:
        tiles = [(16, 32, 128, 4, 3, (2, 4)), (16, 64, 128, 4, 3, (2, 4, 8)), (16, 128, 128, 4, 3, (4, 8)),
                 (16, 64, 64, 4, 4, (4, 8))]
    elif m <= 64:
        tiles = [(64, 64, 128, 4, 3, (2, 4)), (64, 32, 128, 4, 3, (2, 4)), (64, 128, 64, 4, 3, (4,)),
                 (64, 64, 64, 4, 4, (2, 4))]
    else:
        tiles = [(128, 64, 64, 4, 3, (2, 4)), (64, 64, 128, 4, 3, (2,)), (128, 128, 64, 8, 3, (2, 4)),
                 (64, 64, 64, 4, 4, (2,)), (64, 128, 64, 4, 3, (2,))]
    return [cfg(bm, bn, bk, warps, stages, split=pieces)
            for bm, bn, bk, warps, stages, splits in tiles for pieces in (1, *splits)]


BMM = [cfg(128, 128, 32, 8, 3), cfg(128, 256, 64, 8, 3, l2=8), cfg(128, 128, 64, 4, 4, l2=8), cfg(64, 64, 64, 4, 3),
       cfg(16, 128, 256, 4, 4), cfg(16, 64, 256, 4, 4), cfg(128, 128, 64, 8, 3), cfg(64, 128, 64, 4, 4), cfg(64, 64, 128, 4, 4)]


def plan() -> list:
    """(op, kernel module, shape, [configs]) in measuring order: the matmul suite first."""
    rows = []
    for op in ("matmul", "linear"):
        mnk = [(16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096), (128, 11008, 4096)] if op == "matmul" else \
            [(16, 4096, 4096), (128, 4096, 14336)]
        for m, n, k in mnk:
            shape = {"M": m, "N": n, "K": k}
            rows.append((op, "kernels_src.matmul", shape, decode(m) + (split_k(m, n) if op == "matmul" else [])))
        big = [(4096, 4096, 4096), (4096, 4096, 11008), (4096, 11008, 4096), (8192, 8192, 8192)] if op == "matmul" else \
            [(4096, 4096, 4096), (8192, 14336, 4096)]
        for m, n, k in big:
            shape = {"M": m, "N": n, "K": k}
            rows.append((op, "kernels_src.matmul", shape, LARGE))
    awkward = {"M": 77, "N": 1001, "K": 999}  # correctness at sizes off every block
    for op in ("matmul", "linear"):
        rows.append((op, "kernels_src.matmul", awkward, [cfg(16, 32, 256, 4, 4), cfg(64, 64, 128, 4, 5), LARGE[3]]))
    rows.append(("bmm", "kernels_src.matmul", {"B": 7, "M": 333, "N": 129, "K": 257}, BMM[:2]))
    for b, m, n, k in ((16, 2048, 2048, 2048), (128, 16, 128, 4096), (32, 1024, 1024, 128), (8, 4096, 4096, 64)):
        rows.append(("bmm", "kernels_src.matmul", {"B": b, "M": m, "N": n, "K": k}, BMM))
    return rows


def shape_text(shape: dict) -> str:
    return "x".join(str(shape[key]) for key in ("B", "M", "N", "K") if key in shape)


def job_key(op: str, module: str, shape: dict, overrides: dict) -> str:
    """Candidates compile once per kernel, config and size divisibility (the JIT's specialization)."""
    return json.dumps([op, module, overrides, [v % 16 == 0 for v in shape.values()]], sort_keys=True)


def spec_for(op: str):
    from kernels_src import matmul
    return next(s for s in matmul.OPS if s.name == op)


def kernel_for(op: str, module: str):
    import importlib
    return getattr(importlib.import_module(module), op)


def bind_row(op: str, module: str, shape: dict, device: str):
    """(bound kernel, args) for one (op, kernel, shape), bf16 inputs."""
    args = spec_for(op).make_inputs(shape, torch.bfloat16, device, 0)
    kernel = kernel_for(op, module)
    kernel.reset()
    return kernel.bind(args), args


def config_for(bound, overrides: dict):
    """The normalized config of one candidate; `indexing` is widened to every site, and shorter lists
    (eviction policies, per-loop knobs) keep the default for the kernel's further sites and loops."""
    default = bound.config_spec.default_config()
    overrides = dict(overrides)
    if overrides.get("indexing") == TMA_LOADS:
        overrides["indexing"] = [TMA, TMA] + ["pointer"] * (len(default["indexing"]) - 2)
    elif isinstance(overrides.get("indexing"), str):
        overrides["indexing"] = [overrides["indexing"]] * len(default["indexing"])
    for name, value in overrides.items():  # per-site / per-loop lists cover the first ones; default for the rest
        if isinstance(value, list) and isinstance(default[name], (list, tuple)) and len(value) < len(default[name]):
            overrides[name] = value + list(default[name][len(value):])
    return bound.config_spec.normalize(default.merged(**overrides))


def compile_job(job) -> tuple:
    """Child process: compile one candidate by running it once on the GPU (fills Triton's cache)."""
    op, module, shape, overrides = job
    try:
        bound, args = bind_row(op, module, shape, DEVICE)
        bound.compile_config(config_for(bound, overrides))(*args)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return job, None
    except Exception as error:  # compile failures (e.g. out of shared memory) are results here
        return job, f"{type(error).__name__}: {str(error)[:200]}"


def xcompile_job(job) -> tuple:
    """CPU: cross-compile one candidate for sm_90 and summarize it."""
    from build_tools.cross_compile import cross_compile
    op, module, shape, overrides = job
    try:
        bound, args = bind_row(op, module, shape, "cpu")
        compiled = cross_compile(bound, args, config_for(bound, overrides))
        return job, [{**c.features(), **c.ptxas_info()} for c in compiled]
    except Exception as error:
        return job, f"{type(error).__name__}: {str(error)[:200]}"


def flops(op: str, shape: dict) -> float:
    return 2.0 * shape.get("B", 1) * shape["M"] * shape["N"] * shape["K"]


def baseline(op: str):
    return {"matmul": torch.matmul, "linear": torch.nn.functional.linear, "bmm": torch.bmm}[op]


def measure(rows: list, failed: set, log, deadline: float) -> None:
    from triton.testing import do_bench
    for op, module, shape, configs in rows:
        if time.time() > deadline:
            return
        bound, args = bind_row(op, module, shape, DEVICE)
        expected = baseline(op)(*args)
        cublas_us = do_bench(lambda: baseline(op)(*args), warmup=5, rep=30, return_mode="median") * 1e3
        scale = expected.abs().max().item()
        for overrides in configs:
            if time.time() > deadline:
                return
            if job_key(op, module, shape, overrides) in failed:
                continue
            record = {"op": op, "kernel": module, "shape": shape, "overrides": overrides, "cublas_us": cublas_us}
            try:
                config = config_for(bound, overrides)
                fn = bound.compile_config(config)
                error = (fn(*args).float() - expected.float()).abs().max().item() / scale
                us = do_bench(lambda: fn(*args), warmup=5, rep=30, return_mode="median") * 1e3
                record.update(config=config.to_dict(), us=us, tflops=flops(op, shape) / us * 1e-6,
                              vs_cublas=cublas_us / us, rel_error=error, ok=error < 0.02)
            except Exception as err:
                record["error"] = f"{type(err).__name__}: {str(err)[:200]}"
            log.write(json.dumps(record) + "\n")
            log.flush()
        del args, expected


def compile_all(jobs: list, options, deadline: float) -> set:
    """Compile in worker processes until `deadline`; returns the keys of candidates that failed.
    At the deadline the workers are stopped and the rest compile in the measuring loop."""
    work = xcompile_job if options.dry_run else compile_job
    failed = set()
    pool = futures.ProcessPoolExecutor(options.workers, mp_context=multiprocessing.get_context("spawn"))
    pending = [pool.submit(work, job) for job in jobs]
    with open(os.path.join(options.out, "compile.jsonl"), "w") as log:
        try:
            for future in futures.as_completed(pending, timeout=None if options.dry_run else max(deadline - time.time(), 1)):
                job, result = future.result()
                op, module, shape, overrides = job
                if isinstance(result, str):
                    failed.add(job_key(op, module, shape, overrides))
                log.write(json.dumps({"op": op, "kernel": module, "overrides": overrides, "result": result}) + "\n")
                log.flush()
        except futures.TimeoutError:
            print("compile budget spent: the rest compile while measuring", flush=True)
            for process in list(pool._processes.values()):
                process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    return failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--deadline", type=float, default=220.0)
    parser.add_argument("--compile-budget", type=float, default=110.0)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--only", nargs="*", help="rows to run, as op:MxNxK (bmm: op:BxMxNxK)")
    options = parser.parse_args()
    started = time.time()
    os.makedirs(options.out, exist_ok=True)
    if not options.dry_run:
        import triton
        with open(os.path.join(options.out, "env.json"), "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S")}, fh)
    rows = [row for row in plan() if not options.only or f"{row[0]}:{shape_text(row[2])}" in options.only]
    jobs, seen = [], set()
    for op, module, shape, configs in rows:
        for overrides in configs:
            key = job_key(op, module, shape, overrides)
            if key not in seen:
                seen.add(key)
                jobs.append((op, module, shape, overrides))
    print(f"{len(jobs)} distinct candidates, {sum(len(r[3]) for r in rows)} measurements", flush=True)
    failed = compile_all(jobs, options, started + options.compile_budget)
    print(f"compiled in {time.time() - started:.0f}s; {len(failed)} failed", flush=True)
    if options.dry_run:
        return
    with open(os.path.join(options.out, "sweep.jsonl"), "w") as log:
        measure(rows, failed, log, started + options.deadline)
    print(f"done in {time.time() - started:.0f}s", flush=True)
    summarize(os.path.join(options.out, "sweep.jsonl"))


def summarize(path: str) -> None:
    """Best candidate per shape and the geomean of the best ratios to cuBLAS per op."""
    best: dict = {}
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            if r.get("ok"):
                key = (r["op"], json.dumps(r["shape"]))
                if key not in best or r["us"] < best[key]["us"]:
                    best[key] = r
    ratios: dict = {}
    for (op, shape), r in best.items():
        ratios.setdefault(op, []).append(r["vs_cublas"])
        print(f"{op} {shape}: {r['us']:.1f} us {r['tflops']:.0f} TFLOP/s, x{r['vs_cublas']:.2f} cuBLAS "
              f"({r['cublas_us']:.1f} us) {r['kernel']} {json.dumps(r['overrides'])}", flush=True)
    for op, values in ratios.items():
        print(f"{op}: geomean x{math.exp(sum(map(math.log, values)) / len(values)):.3f} over {len(values)} shapes")


if __name__ == "__main__":
    main()
