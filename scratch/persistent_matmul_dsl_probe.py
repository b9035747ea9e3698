"""Probe: the DSL's persistent_flattens / store_subtiles knobs on the tables' persistent matmul and
linear entries (scratch/persistent_matmul_jobs.json), timed two ways in one process, against cuBLAS:
- "report": benchmarks.timing.Timer.device_rounds (the report's method: L2 write-flushed before
  each run, a GPU-side wait so that the host's enqueue is outside the timed region), 7 rounds;
- "sustained": 30 back-to-back calls between two CUDA events (no flush: the GPU stays busy and
  hot, as in a training step's chain of products), median per-call time of 7 such loops.
tools/config_probe.py (triton.testing.do_bench) had read these variants 0.93-1.03x of the tuned
configs where scratch/matmul_persistent_probe.py (hand-written kernels, Timer) read 1.00-1.04x.
Run: python3 scratch/persistent_matmul_dsl_probe.py [JOBS.json] [OP ... DTYPE ...]"""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import torch.nn.functional as F
from benchmarks.timing import Timer
from build_tools.dsl.config import Config

import kernels_src

SUSTAINED_CALLS = 30


def sustained_us(fns: dict, loops: int = 7) -> dict:
    times = {name: [] for name in fns}
    for i in range(loops):
        for name in (list(fns) if i % 2 == 0 else list(reversed(fns))):
            fn = fns[name]
            fn()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(SUSTAINED_CALLS):
                fn()
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) * 1e3 / SUSTAINED_CALLS)
    return {name: statistics.median(v) for name, v in times.items()}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "scratch/persistent_matmul_jobs.json"
    keep = set(sys.argv[2:])  # ops and dtypes to keep
    jobs = [j for j in json.load(open(path)) if not keep or {j["op"], j["dtype"]} <= keep]
    table = json.load(open("tuned_configs/sm_90.json"))
    timer = Timer(torch.device("cuda"))
    rows = []
    for job in jobs:
        entry = next(e for e in table["entries"] if (e["op"], e["dtype"], e["shape"]) == (job["op"], job["dtype"], job["shape"]))
        spec = next(s for s in kernels_src.ALL_OPS if s.name == job["op"])
        dtype = getattr(torch, job["dtype"])
        args = spec.make_inputs(job["shape"], dtype, "cuda", 0)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        peer = (lambda: torch.mm(*args)) if job["op"] == "matmul" else (lambda: F.linear(*args))
        fns = {"cublas": peer}
        reference = peer().float()
        errors = {}
        for label, overrides in {"tuned": {}, **job["variants"]}.items():
            compiled = bound.compile_config(bound.config_spec.normalize(Config({**entry["config"], **overrides})))
            try:
                diff = (compiled(*args).float() - reference).abs().max().item()
            except Exception as error:  # a variant past the GPU's resources is reported and skipped
                errors[label] = f"{type(error).__name__}: {str(error)[:200]}"
                continue
            errors[label] = diff
            fns[label] = (lambda c: lambda: c(*args))(compiled)
        report = {name: statistics.median(v) for name, v in timer.device_rounds(fns, rounds=7).items()}
        sustained = sustained_us(fns)
        row = {"op": job["op"], "dtype": job["dtype"], "shape": job["shape"], "report_us": report,
               "sustained_us": sustained, "max_abs_diff_vs_cublas": errors}
        print(job["op"], job["dtype"], json.dumps(job["shape"]), flush=True)
        for name in fns:
            print(f"   {name:24s} report {report[name]:9.1f} us ({report['tuned'] / report[name]:.3f}x tuned, "
                  f"{report['cublas'] / report[name]:.3f}x cuBLAS)   sustained {sustained[name]:9.1f} us "
                  f"({sustained['tuned'] / sustained[name]:.3f}x tuned, {sustained['cublas'] / sustained[name]:.3f}x cuBLAS)",
                  flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "persistent_matmul_dsl_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
