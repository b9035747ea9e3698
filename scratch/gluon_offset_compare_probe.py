"""Probe: the Gluon lowering's comparisons with the scalar offset moved off the index vector
(`relative_masks`, `Lowering._offset_and_index`) against the lowering without it, on every Gluon
entry of the H100 table, in one process (benchmarks.timing.Timer rounds, L2 flushed). Outputs must
be bit-identical. (As first run, 2026-11-28, the rewrite was not yet a knob: the probe switched the
method itself, and once also moved bound masks' offsets: notes/gluon_probe_results/h100_offset_compare_*.json.)

    python3 scratch/gluon_offset_compare_probe.py OUT_DIR [warm I]

`warm I` compiles entry I's two modules (parallel processes fill Triton's cache before the timing).
"""
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import Timer  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from kernels_src import attention  # noqa: E402

TABLE = Path(__file__).resolve().parents[1] / "tuned_configs" / "sm_90-nvidia-h100-80gb-hbm3.json"
OPS = {"attention_fwd": (attention.attention_fwd, attention.make_fwd_inputs),
       "attention_bwd": (attention.attention_bwd, attention.make_bwd_inputs)}


def entries() -> list:
    return [e for e in json.loads(TABLE.read_text())["entries"]
            if e["op"] in OPS and e["dtype"] == "bfloat16" and "gluon" in json.dumps(e["config"].get("backend"))]


def sources(entry) -> tuple:
    kernel, make = OPS[entry["op"]]
    args = make(entry["shape"], torch.bfloat16, "cuda", 0)
    bound = kernel.bind(args)
    return args, {label: bound.to_triton_code(bound.config_spec.normalize(Config({**entry["config"], "relative_masks": on})))
                  for label, on in (("before", False), ("moved", True))}


def functions(entry) -> tuple:
    args, texts = sources(entry)
    name = OPS[entry["op"]][0].name
    return args, {label: getattr(load_module(text), name) for label, text in texts.items()}


def main() -> None:
    out_dir = Path(sys.argv[1])
    todo = entries()
    if len(sys.argv) > 3 and sys.argv[2] == "warm":
        args, fns = functions(todo[int(sys.argv[3])])
        for fn in fns.values():
            fn(*args)
        return
    timer = Timer(torch.device("cuda", 0))
    results = []
    for entry in todo:
        args, fns = functions(entry)
        outs = {label: fn(*args) for label, fn in fns.items()}
        identical = all(torch.equal(a, b) for a, b in zip(outs["before"], outs["moved"]))
        calls = {label: (lambda f: lambda: f(*args))(fn) for label, fn in fns.items()}
        times = {label: statistics.median(runs) for label, runs in timer.device_rounds(calls, rounds=7).items()}
        row = {"op": entry["op"], "shape": entry["shape"], "us": times, "gain": times["before"] / times["moved"],
               "bit_identical": identical}
        results.append(row)
        print(f"{entry['op']} {json.dumps(entry['shape'])}: before {times['before']:.1f} us, moved {times['moved']:.1f} us, "
              f"{row['gain']:.3f}x, identical {identical}", flush=True)
        (out_dir / "offset_compare_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
