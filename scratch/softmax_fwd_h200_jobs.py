"""Writes scratch/softmax_fwd_h200_jobs.json: the whole-row softmax forward on an H200 at 16384x16384,
4096x16384 and 16384x4096 bf16 (92.8% / 87.2% / 93.2% of copy in h200/RESULTS.md of 08:10 UTC, where
RMSNorm moves the same bytes at 16384x16384 in 261.6 us against softmax's 271.8): warps, stages and
rows per program around the tuned configs."""
import json

VARIANTS = {}
for warps in (8, 16, 32):
    for stages in (1, 2, 3):
        VARIANTS[f"w{warps} s{stages}"] = {"num_warps": warps, "num_stages": stages}
jobs = [{"op": "softmax_fwd", "dtype": "bfloat16", "shape": {"M": m, "N": n}, "variants": VARIANTS}
        for m, n in ((16384, 16384), (4096, 16384), (16384, 4096))]
with open("scratch/softmax_fwd_h200_jobs.json", "w") as fh:
    json.dump(jobs, fh, indent=1)
