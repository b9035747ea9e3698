"""Writes scratch/matmul_ws_large_jobs.json and matmul_ws_decode_jobs.json: Triton 3.6's automatic Hopper warp specialization for the bf16
matmul entries. The fourteenth session found `warp_specialize` ignored on these loops, at 8 warps;
the nineteenth found it takes effect only at num_warps=4 with every load a tensor descriptor
(cross-compiled for sm_90: 128x128 tiles specialize, 128x256 tiles and 2-piece stores do not, and a
flattened persistent loop does not)."""
import json

TD = "tensor_descriptor"
WS = {"num_warps": 4, "range_warp_specializes": [True, None, None], "split_k": 1,
      "indexing": [TD, TD, TD, "pointer", "pointer", "pointer", "pointer", "pointer"],
      "store_subtiles": [1, 1, 1], "persistent_flattens": [False, False]}


def ws(blocks, stages, pid="flat", **extra):
    return {**WS, "block_sizes": blocks, "num_stages": stages, "pid_type": pid, **extra}


LARGE = {
    "ws 128x128x64 s3": ws([128, 128, 64], 3),
    "ws 128x128x64 s4": ws([128, 128, 64], 4),
    "ws 128x128x64 s5": ws([128, 128, 64], 5),
    "ws 128x128x128 s3": ws([128, 128, 128], 3),
    "ws persistent 128x128x64 s4": ws([128, 128, 64], 4, "persistent_interleaved"),
    "ws persistent 128x128x64 s5": ws([128, 128, 64], 5, "persistent_interleaved"),
    "ws persistent blocked 128x128x64 s4": ws([128, 128, 64], 4, "persistent_blocked"),
}
DECODE = {
    "ws 64x64x128 s4": ws([64, 64, 128], 4, l2_groupings=[1, 1]),
    "ws 64x64x128 s6": ws([64, 64, 128], 6, l2_groupings=[1, 1]),
    "ws 64x128x128 s4": ws([64, 128, 128], 4, l2_groupings=[1, 1]),
    "ws 128x64x128 s4": ws([128, 64, 128], 4, l2_groupings=[1, 1]),
    "ws 64x32x256 s4": ws([64, 32, 256], 4, l2_groupings=[1, 1]),
    "ws 64x64x256 s3": ws([64, 64, 256], 3, l2_groupings=[1, 1]),
}
large, decode = [], []
for shape in ({"M": 4096, "N": 4096, "K": 4096}, {"M": 4096, "N": 4096, "K": 11008},
              {"M": 4096, "N": 11008, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}):
    large.append({"op": "matmul", "dtype": "bfloat16", "shape": shape, "variants": LARGE})
for shape in ({"M": 128, "N": 4096, "K": 4096}, {"M": 128, "N": 11008, "K": 4096}, {"M": 64, "N": 4096, "K": 4096}):
    decode.append({"op": "matmul", "dtype": "bfloat16", "shape": shape, "variants": DECODE})
for name, jobs in (("large", large), ("decode", decode)):
    with open(f"scratch/matmul_ws_{name}_jobs.json", "w") as fh:
        json.dump(jobs, fh, indent=1)
