"""Probe: the tuner's CudaEventTimer (build_tools/autotune/timing.py) against the report's Timer
(benchmarks/timing.py) on DSL-compiled callables, as the tuner times them: the bf16 softmax forward
16384x2048 under its old (evict_last) and new H100 configs, and matmul 4096³ under its sm_90.json
and H100 configs. "with_hold" adds the report's GPU-side wait (benchmarks/timing.py) to the tuner's timer.
H100, 2026-11-26: all three within 1% of each other (the do_bench discrepancy of tools/config_probe.py
is do_bench's own), so the tuner's timer stays as it is.
Run: python3 scratch/tuner_timer_probe.py"""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import kernels_src
from benchmarks.timing import Timer
from build_tools.autotune.timing import CudaEventTimer, interleaved
from build_tools.dsl.config import Config


class WithHoldTimer(CudaEventTimer):
    """The tuner's timer with the report's wait before each run (twice the host's enqueue time)."""

    def __init__(self):
        super().__init__()
        self.report = Timer(torch.device("cuda"))

    def samples(self, fn, repeats):
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        hold = self.report._hold_cycles(fn)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            self.flush_buffer.zero_()
            torch.cuda._sleep(hold)
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1000.0 for s, e in events]


def entry(path, op, shape):
    return next(e for e in json.load(open(path))["entries"] if (e["op"], e["dtype"], e["shape"]) == (op, "bfloat16", shape))


def main():
    cases = [("softmax_fwd", {"M": 16384, "N": 2048}), ("matmul", {"M": 4096, "N": 4096, "K": 4096})]
    report = Timer(torch.device("cuda"))
    tuner, with_hold = CudaEventTimer(), WithHoldTimer()
    rows = []
    for op, shape in cases:
        spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
        args = spec.make_inputs(shape, torch.bfloat16, "cuda", 0)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        fns = {}
        for label, path in (("sm_90.json", "tuned_configs/sm_90.json"), ("h100", "tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json")):
            compiled = bound.compile_config(bound.config_spec.normalize(Config(entry(path, op, shape)["config"])))
            fns[label] = (lambda c: lambda: c(*args))(compiled)
        row = {"op": op, "shape": shape, "report": {k: statistics.median(v) for k, v in report.device_rounds(fns, rounds=7).items()}}
        for name, timer in (("tuner", tuner), ("with_hold", with_hold)):
            samples = interleaved(list(fns.values()), timer, rounds=7, per_round=15)
            row[name] = {label: statistics.median([t for r in per for t in r]) for label, per in zip(fns, samples)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "tuner_timer_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
