"""Check: the causal D128 forward through the public API against SDPA's cuDNN backend, in one
process (benchmarks.timing.Timer rounds, L2 flushed), at the report's causal D128 shapes. Written
after the 04:44 UTC report of 2026-11-28 read S8192 at 0.94x while a config probe had the shipped
config 1.02x faster than the one before.

    python3 scratch/attention_fwd_vs_cudnn_check.py OUT_DIR
"""
import json
import statistics
import sys
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helion_kernels as hk  # noqa: E402
from benchmarks.timing import Timer  # noqa: E402

SHAPES = [(4, 32, 32, s) for s in (1024, 2048, 4096, 8192)] + [(8, 32, 8, 1024), (1, 32, 8, 16384)]


def main() -> None:
    timer = Timer(torch.device("cuda", 0))
    rows = []
    for batch, heads, kv_heads, seq in SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(seq)
        q = torch.randn(batch, heads, seq, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(batch, kv_heads, seq, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(batch, kv_heads, seq, 128, device="cuda", dtype=torch.bfloat16, generator=gen)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        enable_gqa=heads != kv_heads)

        def ours():
            return hk.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=heads != kv_heads)

        diff = (ours().float() - cudnn().float()).abs().max().item()
        times = {label: statistics.median(runs)
                 for label, runs in timer.device_rounds({"ours": ours, "cudnn": cudnn}, rounds=7).items()}
        row = {"shape": [batch, heads, kv_heads, seq], "us": times, "ours_x": times["cudnn"] / times["ours"],
               "max_diff": diff}
        print(json.dumps(row), flush=True)
        rows.append(row)
    (Path(sys.argv[1]) / "fwd_vs_cudnn.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
