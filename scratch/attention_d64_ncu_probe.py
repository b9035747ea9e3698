"""Probe: Nsight Compute on the D64 forward (H200 table entries) beside cuDNN's kernel at the same
shapes, to see which unit bounds it now that neither fewer FP32-pipe instructions (`row_sum_dot`,
0.96-0.99x) nor exponentials on the FMA pipe (the thirty-fourth session, 0.72-0.96x) helped.

    ncu --profile-from-start off --set full --clock-control none -o OUT/d64 \
        python3 scratch/attention_d64_ncu_probe.py
    ncu --import OUT/d64.ncu-rep --page raw --csv > OUT/d64_raw.csv

Profiled, one call each (after warm-up calls outside the profiled range), at B16 H16 S512 and B4
H32 S4096 (non-causal): the shipped kernel, the same with `row_sum_dot`, the one-warpgroup form
(64x64 tiles, maxnreg 80) and the two-warpgroup form (128x128 tiles on a drawn persistent grid),
and SDPA's cuDNN backend.
"""
import sys
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402
from kernels_src.attention import attention_fwd, make_fwd_inputs  # noqa: E402

SHAPES = [{"B": 16, "H": 16, "Hkv": 16, "Sq": 512, "Sk": 512, "D": 64, "causal": False},
          {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 64, "causal": False}]


VARIANTS = [("shipped", {}), ("row_sum_dot", {"row_sum_dot": True}),
            ("one group", {"block_sizes": [64, 64], "consumer_groups": 1, "maxnreg": 80, "pid_type": "flat"}),
            ("two groups", {"block_sizes": [128, 128], "consumer_groups": 2, "maxnreg": None,
                            "pid_type": "persistent_dynamic", "num_stages": 2})]


def runs(shape: dict) -> list:
    """(label, call) of each implementation at `shape`."""
    q, k, v, causal, scale = args = make_fwd_inputs(shape, torch.bfloat16, "cuda", 0)
    config = DISPATCHER.resolve("attention_fwd", torch.device("cuda"), torch.bfloat16, shape).config
    bound = attention_fwd.bind(args)
    out = []
    for label, overrides in VARIANTS:
        fn = load_module(bound.to_triton_code(bound.config_spec.normalize(Config({**config, **overrides})))).attention_fwd
        out.append((label, lambda fn=fn: fn(*args)))

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    return out + [("cudnn", cudnn)]


def main() -> None:
    calls = [(f"S{shape['Sq']} {label}", call) for shape in SHAPES for label, call in runs(shape)]
    for _, call in calls:
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for label, call in calls:
        torch.cuda.nvtx.range_push(label)
        call()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
