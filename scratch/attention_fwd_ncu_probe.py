"""Probe: Nsight Compute on the causal D128 S1024 forward's table entry (H100), as shipped and with
the tile cost probe's "one loop" edit (the diagonal key tile in the unmasked loop's pipeline, no
mask: wrong results, 1.19-1.20x faster), to see where the shipped kernel's extra time goes.

    ncu --profile-from-start off --set full --import-source yes --clock-control none \
        -o OUT/fwd python3 scratch/attention_fwd_ncu_probe.py

Each variant is compiled and run first outside the profiled range; then one call of each runs
inside cudaProfilerStart/Stop. The generated sources are written next to the report (the SASS
line info points into them).
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402
from kernels_src.attention import attention_fwd, make_fwd_inputs  # noqa: E402
from scratch.attention_fwd_tile_cost_probe import edited  # noqa: E402

SHAPE = {"B": 4, "H": 32, "Hkv": 32, "Sq": 1024, "Sk": 1024, "D": 128, "causal": True}


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "/tmp"))
    args = make_fwd_inputs(SHAPE, torch.bfloat16, "cuda", 0)
    config = DISPATCHER.resolve("attention_fwd", torch.device("cuda"), torch.bfloat16, SHAPE).config
    bound = attention_fwd.bind(args)
    source = bound.to_triton_code(bound.config_spec.normalize(Config(config)))
    fns = []
    for variant in ("shipped", "one loop"):
        text = edited(source, variant)
        (out_dir / f"{variant.replace(' ', '_')}.py").write_text(text)
        fn = load_module(text).attention_fwd
        for _ in range(3):
            fn(*args)
        fns.append(fn)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for fn in fns:
        fn(*args)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
