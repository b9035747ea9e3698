"""Upper bound on what the dk/dv Gluon kernel's lse and delta loads cost: the kernel as lowered
(64-query tiles, P and dS staged in shared memory) against hand-edited copies whose two column
loads are constants, or values made in registers and moved to the dots' layout as the loads are
(wrong values; times only), torch.profiler per kernel, B4 H32 S4096 D128 bf16.

    python3 scratch/gluon_bwd_row_loads_bound.py   (on a Hopper GPU)
"""
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.kernel import load_module  # noqa: E402
from kernels_src.attention import attention_bwd, make_bwd_inputs  # noqa: E402
from scratch.gluon_bwd_kernel_split import kernel_times, roles  # noqa: E402


def without_row_loads(source: str) -> str:
    """The dk/dv consumers' `load_N = gl.convert_layout(gl.load(...vec_layout...), L)` lines as constants."""
    return re.sub(r"(\s+)(load_\d+) = gl\.convert_layout\(gl\.load\(.*vec_layout.*\), (gl\.SliceLayout\(0, s_layout\))\)\n",
                  r"\1\2 = gl.full([_BLOCK_SIZE_3], 0.0, gl.float32, \3)\n", source)


def converted_only(source: str) -> str:
    """The same loads as values made in registers (no global load) that still move to the dots' layout."""
    return re.sub(r"(\s+)(load_\d+) = gl\.convert_layout\(gl\.load\(.*vec_layout.*\), (gl\.SliceLayout\(0, s_layout\))\)\n",
                  r"\1\2 = gl.convert_layout(gl.arange(0, _BLOCK_SIZE_3, vec_layout).to(gl.float32) * 1e-30, \3)\n", source)


def main() -> None:
    for causal in (False, True):
        shape = {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 128, "causal": causal}
        args = make_bwd_inputs(shape, torch.bfloat16, "cuda", 0)
        config = {"backend": "gluon", "consumer_groups": 2, "block_sizes": [128, 64, 128, 64], "num_stages": 3,
                  "range_peel_tails": [False] * (5 if causal else 3), "shared_operands": [False, True]}
        source = attention_bwd.bind(args).to_triton_code(config)
        edited = without_row_loads(source)
        print(f"causal={causal}: {source.count('vec_layout))') - edited.count('vec_layout))')} loads replaced", flush=True)
        names = roles(source)
        for label, text in (("as lowered", source), ("row loads as constants", edited),
                            ("no loads, values converted", converted_only(source))):
            fn = getattr(load_module(text), "attention_bwd")
            times = {names.get(k, k): v for k, v in kernel_times(fn, args).items()}
            print(f"causal={causal} {label}: {times} (us per call)", flush=True)


if __name__ == "__main__":
    main()
