"""Writes scratch/session38_lpt_jobs.json: the thirty-eighth session's second probe (H200): causal
attention with its heaviest tiles launched first (loop_orders with heads fastest, tile_reversals),
forward at D64 (one group and three) and backward at D64 and D128."""
import json

def shape(S, D, causal, B=4, H=32, Hkv=32):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}

three = {"consumer_groups": 3, "maxnreg": None, "diagonal_branch": True, "range_peel_tails": [True],
         "num_stages": 2, "block_sizes": [192, 128], "backend": "gluon"}
# heads fastest, then query tiles, then batch: within one batch the last (longest) query tiles of
# every head first; "all": heads, then batch, query tiles slowest (the longest of all first)
by_batch = {"loop_orders": [[1, 0, 2]], "tile_reversals": [True]}
by_all = {"loop_orders": [[1, 2, 0]], "tile_reversals": [True]}
jobs = []
for dtype in ("bfloat16", "float16"):
    for S in (1024, 2048, 4096):
        job = {"op": "attention_fwd", "dtype": dtype, "shape": shape(S, 64, True),
               "variants": {"1g heavy first by batch": by_batch,
                            "1g heavy first by batch pd": {**by_batch, "pid_type": "persistent_dynamic"},
                            "1g heavy first": by_all,
                            "3g heavy first by batch": {**three, **by_batch, "pid_type": "flat"},
                            "3g heavy first by batch pd": {**three, **by_batch, "pid_type": "persistent_dynamic"},
                            "3g heavy first pd": {**three, **by_all, "pid_type": "persistent_dynamic"}}}
        if S == 4096:
            job["from_shape"] = shape(2048, 64, True)
        jobs.append(job)
bwd = {"heavy first by batch": {"loop_orders": [[1, 0, 2], [1, 0, 2]], "tile_reversals": [True, False]},
       "heavy first": {"loop_orders": [[1, 2, 0], [1, 2, 0]], "tile_reversals": [True, False]},
       "dq heavy first by batch": {"loop_orders": [[1, 0, 2], [0, 1, 2]], "tile_reversals": [True, False]}}
for dtype in ("bfloat16",):
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(2048, 64, True), "variants": bwd})
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(4096, 128, True), "variants": bwd})
json.dump(jobs, open("scratch/session38_lpt_jobs.json", "w"), indent=1)
print(len(jobs), sum(len(j["variants"]) for j in jobs))
