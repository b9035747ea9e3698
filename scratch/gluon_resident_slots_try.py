"""A/B of the Gluon lowering's resident slots on persistent grids (build_tools/dsl/gluon_lowering.py):
the generated module (`helion_kernels.scaled_dot_product_attention`, generated before the change:
one query slot, the next tile's query loaded after this tile's last dots) against the same table
config compiled by the DSL now (two slots: the next tile's query loads during this tile), with
SDPA's cuDNN backend, in one process. The outputs of the two are compared.

    python3 scratch/gluon_resident_slots_try.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

import torch

from build_tools.autotune.table import load_table
from kernels_src.attention import attention_fwd
from tests.dsl.test_gluon_backend import attention_args

TABLE = "tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"
# (B, H, Hkv, S, causal) and the table entry the runtime takes there (the 2026-11-27 report's notes)
CASES = [((4, 32, 32, s, False), (4, 32, 32, 4096, False)) for s in (1024, 2048, 4096, 8192)] + \
        [((4, 32, 32, 1024, True), (8, 32, 8, 1024, True)), ((8, 32, 8, 1024, True), (8, 32, 8, 1024, True))] + \
        [((4, 32, 32, s, True), (4, 32, 32, 4096, True)) for s in (2048, 4096, 8192)]


def entry_config(table: dict, key: tuple) -> dict:
    b, h, hkv, s, causal = key
    shape = {"B": b, "H": h, "Hkv": hkv, "Sq": s, "Sk": s, "D": 128, "causal": causal}
    return next(e["config"] for e in table["entries"]
                if e["op"] == "attention_fwd" and e["dtype"] == "bfloat16" and e["shape"] == shape)


def main() -> None:
    import helion_kernels
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from benchmarks.timing import Timer
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    opts = parser.parse_args()
    table = load_table(TABLE)
    timer = Timer(torch.device("cuda"))
    results = []
    for (b, h, hkv, s, causal), key in CASES:
        config = entry_config(table, key)
        args = attention_args(b, h, hkv, s, s, 128, causal, device="cuda", dtype=torch.bfloat16)
        q, k, v = args[:3]
        launcher = attention_fwd.bind(args).compile_config(config)

        def module():
            return helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hkv != h)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hkv != h)
        new_out = launcher(*args)[0]
        diff = (new_out.float() - module().float()).abs().max().item()
        times = timer.device_rounds({"two_slots": lambda: launcher(*args), "one_slot": module, "cudnn": cudnn}, rounds=7)
        row = dict(B=b, H=h, Hkv=hkv, S=s, causal=causal, entry=list(key), pid_type=config.get("pid_type"),
                   max_diff=diff, **{f"{n}_us": statistics.median(r) for n, r in times.items()})
        row["two_vs_one"] = row["one_slot_us"] / row["two_slots_us"]
        row["two_vs_cudnn"] = row["cudnn_us"] / row["two_slots_us"]
        row["one_vs_cudnn"] = row["cudnn_us"] / row["one_slot_us"]
        results.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(opts.out, "gluon_resident_slots_try.json"), "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
