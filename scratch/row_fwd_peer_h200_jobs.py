"""Writes scratch/row_fwd_peer_h200_jobs.json: the H200 forward entries behind torch.compile in
h200/RESULTS.md of 08:10 UTC (RMSNorm 4096x768 0.975x, 16384x1024 0.98x, 16384x8192 0.979x; softmax
16384x1024 0.973x): rows per program, warps and stages, the weight loaded first, and for RMSNorm
16384x8192 the whole row held (its entry loops over 8192-column chunks)."""
import json


def rows_warps(rows, warps, stages=2, **extra):
    return {"block_sizes": [rows, 1], "num_warps": warps, "num_stages": stages, **extra}


SHORT_RMS = {f"r{r} w{w}{' wf' if wf else ''}": rows_warps(r, w, load_weight_first=wf)
             for r, w in ((1, 1), (1, 2), (1, 4), (2, 2), (2, 4), (4, 4), (4, 8)) for wf in (False, True)}
SHORT_RMS["r2 w2 wf s3"] = rows_warps(2, 2, 3, load_weight_first=True)
LONG_RMS = {"whole row w8": {"reduction_loops": [None]}, "whole row w8 wf": {"reduction_loops": [None], "load_weight_first": True},
            "whole row w16": {"reduction_loops": [None], "num_warps": 16},
            "whole row w16 wf": {"reduction_loops": [None], "num_warps": 16, "load_weight_first": True},
            "looped wf": {"load_weight_first": True}, "looped w16": {"num_warps": 16}}
SOFTMAX = {f"r{r} w{w}": {"block_sizes": [1024, r], "num_warps": w} for r in (1, 2, 4) for w in (2, 4, 8)}
jobs = [{"op": "rms_norm_fwd", "dtype": "bfloat16", "shape": {"M": 4096, "N": 768}, "variants": SHORT_RMS},
        {"op": "rms_norm_fwd", "dtype": "bfloat16", "shape": {"M": 16384, "N": 1024}, "variants": SHORT_RMS},
        {"op": "rms_norm_fwd", "dtype": "bfloat16", "shape": {"M": 16384, "N": 8192}, "variants": LONG_RMS},
        {"op": "softmax_fwd", "dtype": "bfloat16", "shape": {"M": 16384, "N": 1024}, "variants": SOFTMAX}]
with open("scratch/row_fwd_peer_h200_jobs.json", "w") as fh:
    json.dump(jobs, fh, indent=1)
