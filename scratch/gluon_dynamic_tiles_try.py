"""A/B of drawn tiles (pid_type "persistent_dynamic") in the Gluon attention forward, at the report's
shapes: the public function (the table's config as the runtime picks it) against that same config
with its grid switched to drawn tiles in a few tile orders, and SDPA's cuDNN backend, timed in
alternating rounds in one process (benchmarks.timing.Timer). Each variant's output is compared with
the public function's.

    python3 scratch/gluon_dynamic_tiles_try.py --out $OUT [--dtype bfloat16] [--case 4,32,32,1024,1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

import torch

from kernels_src.attention import attention_fwd
from tests.dsl.test_gluon_backend import attention_args

# (B, H, Hkv, S, causal)
CASES = [(4, 32, 32, s, True) for s in (1024, 2048, 4096, 8192)] + [(8, 32, 8, 1024, True), (1, 32, 8, 16384, True)] + \
        [(4, 32, 32, s, False) for s in (1024, 4096)]
VARIANTS = {
    "drawn, as ordered": {"pid_type": "persistent_dynamic"},
    "drawn, 8-head sections, longest first": {"pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2]],
                                              "l2_groupings": [8], "tile_reversals": [True]},
    "drawn, 16-head sections, longest first": {"pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2]],
                                               "l2_groupings": [16], "tile_reversals": [True]},
    "drawn, 32-head sections, longest first": {"pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2]],
                                               "l2_groupings": [32], "tile_reversals": [True]},
    "one tile each, longest first": {"pid_type": "flat", "loop_orders": [[0, 1, 2]], "l2_groupings": [1],
                                     "tile_reversals": [True]},
    "one warpgroup (64 rows), as ordered": {"consumer_groups": 1},
    "one warpgroup (64 rows), drawn, 32-head sections, longest first": {
        "consumer_groups": 1, "pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2]], "l2_groupings": [32],
        "tile_reversals": [True]},
}
# dropped after the first run (2026-11-27 16:49, H100): heads fastest, longest first, at 0.58-0.92x of
# the table (K and V of every head at once fall out of L2)


def main() -> None:
    import helion_kernels
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from benchmarks.timing import Timer
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--case", action="append", help="B,H,Hkv,S,causal (0/1); all CASES if none")
    opts = parser.parse_args()
    cases = [tuple(int(x) for x in c.split(",")) for c in opts.case] if opts.case else CASES
    dtype = getattr(torch, opts.dtype)
    timer = Timer(torch.device("cuda"))
    results = []
    for b, h, hkv, s, causal in cases:
        causal = bool(causal)
        args = attention_args(b, h, hkv, s, s, 128, causal, device="cuda", dtype=dtype)
        q, k, v = args[:3]
        gqa = hkv != h
        (decision,) = helion_kernels.explain(helion_kernels.scaled_dot_product_attention, q, k, v,
                                             is_causal=causal, enable_gqa=gqa).forward
        table_config = dict(decision.config)

        def public():
            return helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        want = public().float()
        runs, notes = {"table": public, "cudnn": cudnn}, {}
        bound = attention_fwd.bind(args)
        for label, overrides in VARIANTS.items():
            try:
                launcher = bound.compile_config({**table_config, **overrides})
                diff = (launcher(*args)[0].float() - want).abs().max().item()
            except Exception as error:  # noqa: BLE001 - a variant the spec refuses or that fails to run
                notes[label] = f"failed: {type(error).__name__}: {str(error)[-300:]}"
                continue
            notes[label] = f"max diff {diff:.3g}"
            if diff < 5e-2:
                runs[label] = (lambda f: lambda: f(*args))(launcher)
        times = timer.device_rounds(runs, rounds=opts.rounds)
        medians = {n: statistics.median(r) for n, r in times.items()}
        row = dict(B=b, H=h, Hkv=hkv, S=s, causal=causal, dtype=opts.dtype, device=torch.cuda.get_device_name(),
                   table_shape=decision.tuned_shape, table_config=table_config, notes=notes,
                   us=medians, vs_table={n: medians["table"] / t for n, t in medians.items()},
                   vs_cudnn={n: medians["cudnn"] / t for n, t in medians.items()})
        results.append(row)
        print(json.dumps({k: row[k] for k in ("B", "H", "Hkv", "S", "causal", "vs_table", "vs_cudnn")}), flush=True)
        with open(os.path.join(opts.out, f"gluon_dynamic_tiles_{opts.dtype}.json"), "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
