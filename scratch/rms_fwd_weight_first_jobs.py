"""Writes scratch/rms_fwd_weight_first_jobs.json: the RMSNorm forward's `load_weight_first` tunable
(the weight loaded before the row's reduction) at the large suite shapes, at 8, 16 and 32 warps.
Most table entries predate the tunable. On an H200 at 16384x16384 bf16 it took 270.1 -> 262.6 us at
16 warps (1.029x, Liger's time in the report) and 0.71x at 32 warps (a first probe, 2026-11-27)."""
import json

VARIANTS = {"w16 s2": {"block_sizes": [1, 1], "num_warps": 16, "num_stages": 2, "load_weight_first": False},
            "w32 s2": {"block_sizes": [1, 1], "num_warps": 32, "num_stages": 2, "load_weight_first": False}}
for warps in (4, 8, 16, 32):
    VARIANTS[f"weight first w{warps} s2"] = {"block_sizes": [1, 1], "num_warps": warps, "num_stages": 2,
                                            "load_weight_first": True}
VARIANTS["weight first w16 s1"] = {"block_sizes": [1, 1], "num_warps": 16, "num_stages": 1, "load_weight_first": True}
SHAPES = {"bfloat16": [(16384, 1024), (16384, 2048), (16384, 4096), (16384, 8192), (16384, 16384), (65536, 4096),
                       (2048, 16384)],
          "float32": [(16384, 4096), (16384, 16384)]}
jobs = [{"op": "rms_norm_fwd", "dtype": dtype, "shape": {"M": m, "N": n}, "variants": VARIANTS}
        for dtype, shapes in SHAPES.items() for m, n in shapes]
with open("scratch/rms_fwd_weight_first_jobs.json", "w") as fh:
    json.dump(jobs, fh, indent=1)
