"""After table entries select `backend: "gluon"` (attention forward, D128): the dispatcher's
choices, the values of the public function against float64 at odd shapes (a table's Gluon entry
serves the D128 calls nearest to it on its GPU), and its times against SDPA's cuDNN backend at
B4 H32, one process.

    python3 scratch/gluon_table_check.py --out $OUT
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics

import torch

import helion_kernels
from benchmarks.timing import Timer
from tests.dsl.test_gluon_backend import attention_args, reference


def main() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    opts = parser.parse_args()
    rows = []
    for causal in (False, True):
        q, k, v = attention_args(4, 32, 32, 4096, 4096, 128, causal, device="cuda", dtype=torch.bfloat16)[:3]
        rows.append({"explain": str(helion_kernels.explain(helion_kernels.scaled_dot_product_attention, q, k, v,
                                                           is_causal=causal))})
        print(rows[-1]["explain"], flush=True)
    for shape in [(2, 4, 2, 1000, 1000), (1, 4, 4, 300, 777), (1, 2, 2, 1, 129), (3, 8, 8, 4096, 4096)]:
        for causal in (False, True):
            for dtype in (torch.bfloat16, torch.float16):
                args = attention_args(*shape, 128, causal, device="cuda", dtype=dtype)
                got = helion_kernels.scaled_dot_product_attention(*args[:3], is_causal=causal,
                                                                  enable_gqa=shape[1] != shape[2])
                want, _ = reference(*args)
                rows.append({"shape": shape, "causal": causal, "dtype": str(dtype),
                             "max_err": float((got.double() - want).abs().max())})
                print(json.dumps(rows[-1]), flush=True)
    timer = Timer(torch.device("cuda"))
    for causal, seq in itertools.product((False, True), (1024, 2048, 4096, 8192)):
        q, k, v = attention_args(4, 32, 32, seq, seq, 128, causal, device="cuda", dtype=torch.bfloat16)[:3]

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        times = timer.device_rounds({
            "ours": lambda: helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal),
            "cudnn": cudnn}, rounds=7)
        row = {"causal": causal, "S": seq, **{f"{n}_us": statistics.median(r) for n, r in times.items()}}
        row["tflops_ours"] = 4 * 4 * 32 * seq * seq * 128 / (2 if causal else 1) / row["ours_us"] / 1e6
        row["ours_vs_cudnn"] = row["cudnn_us"] / row["ours_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(opts.out, "gluon_table_check.json"), "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
