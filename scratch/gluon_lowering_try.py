"""Times the DSL's `backend: "gluon"` (build_tools/dsl/gluon_lowering.py) on the attention forward
against the library's forward (its tuned Triton configs) and SDPA's cuDNN backend, one process.
Values are checked by tests/dsl/test_gluon_backend.py (`-m gpu`).

    python3 scratch/gluon_lowering_try.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

import torch

from kernels_src.attention import attention_fwd
from tests.dsl.test_gluon_backend import attention_args, gluon_config

TIMED = [(4, 32, 32, S, S) for S in (1024, 2048, 4096, 8192)]


def main() -> None:
    import helion_kernels
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from benchmarks.timing import Timer
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    opts = parser.parse_args()
    timer = Timer(torch.device("cuda"))
    results = []
    for causal in (False, True):
        for head_dim in (128, 64):
            for groups in (2, 1):
                config = gluon_config(causal, groups)
                for shape in TIMED:
                    args = attention_args(*shape, head_dim, causal, device="cuda", dtype=torch.bfloat16)
                    q, k, v = args[:3]
                    launcher = attention_fwd.bind(args).compile_config(config)

                    def cudnn():
                        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    times = timer.device_rounds({
                        "gluon": lambda: launcher(*args),
                        "ours": lambda: helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal),
                        "cudnn": cudnn}, rounds=5)
                    row = dict(causal=causal, D=head_dim, groups=groups, S=shape[3],
                               **{f"{n}_us": statistics.median(r) for n, r in times.items()})
                    row["gluon_vs_ours"] = row["ours_us"] / row["gluon_us"]
                    row["gluon_vs_cudnn"] = row["cudnn_us"] / row["gluon_us"]
                    results.append(row)
                    print(json.dumps(row), flush=True)
                with open(os.path.join(opts.out, "gluon_lowering_try.json"), "w") as fh:
                    json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
