"""Where drawn tiles (pid_type "persistent_dynamic") lose on the Gluon attention forward: the table's
static persistent grid against the same config drawing its tiles, and against a hand-edited copy of
the drawn kernel whose loader takes the static grid's tiles (program id, then + programs) instead of
the counter's, everything else kept (the tickets published through shared memory, the while loops,
the sentinel). If that copy runs as fast as the static grid, the draws' atomics cost the time; if it
runs as slow as the drawn grid, the hand-over does. Outputs are compared; timed in alternating
rounds (benchmarks.timing.Timer).

    python3 scratch/gluon_drawn_overhead_probe.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics

import torch

from build_tools.dsl.kernel import load_module
from kernels_src.attention import attention_fwd
from tests.dsl.test_gluon_backend import attention_args

CASES = [(8, 32, 8, 1024), (4, 32, 32, 1024), (4, 32, 32, 2048)]


def static_tickets(source: str) -> str:
    """The drawn kernel with its loader's draws replaced by the static interleaved grid's tiles: the
    first draw by the program id, each next one by the ticket plus the program count."""
    draw = re.compile(r"^(\s*)(\w+) = gl\.atomic_add\(tickets, 1, sem='relaxed'\)$", re.M)
    first = True

    def replace(match):
        nonlocal first
        indent, name = match.group(1), match.group(2)
        text = f"{indent}{name} = gl.program_id(0)" if first else f"{indent}{name} = {name} + gl.num_programs(0)"
        first = False
        return text
    edited, count = draw.subn(replace, source)
    assert count == 2, count
    return edited


def main() -> None:
    import helion_kernels
    from benchmarks.timing import Timer
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    opts = parser.parse_args()
    timer = Timer(torch.device("cuda"))
    rows = []
    for b, h, hkv, s in CASES:
        args = attention_args(b, h, hkv, s, s, 128, True, device="cuda", dtype=torch.bfloat16)
        q, k, v = args[:3]
        (decision,) = helion_kernels.explain(helion_kernels.scaled_dot_product_attention, q, k, v,
                                             is_causal=True, enable_gqa=hkv != h).forward
        config = {**decision.config, "pid_type": "persistent_interleaved", "loop_orders": [[1, 0, 2]],
                  "l2_groupings": [8], "tile_reversals": [True]}
        bound = attention_fwd.bind(args)
        static = bound.compile_config(config)
        drawn = bound.compile_config({**config, "pid_type": "persistent_dynamic"})
        source = bound.to_triton_code({**config, "pid_type": "persistent_dynamic"})
        handed = getattr(load_module(static_tickets(source)), attention_fwd.name)
        want = static(*args)[0].float()
        diffs = {n: (f(*args)[0].float() - want).abs().max().item() for n, f in (("drawn", drawn), ("handed", handed))}
        runs = {n: (lambda f: lambda: f(*args))(f) for n, f in (("static", static), ("drawn", drawn), ("handed", handed))}
        times = {n: statistics.median(t) for n, t in timer.device_rounds(runs, rounds=7).items()}
        row = dict(B=b, H=h, Hkv=hkv, S=s, device=torch.cuda.get_device_name(), diffs=diffs, us=times,
                   vs_static={n: times["static"] / t for n, t in times.items()})
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(opts.out, "gluon_drawn_overhead_probe.json"), "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
