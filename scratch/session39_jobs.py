"""Writes scratch/session39_jobs.json: the thirty-ninth session's probe (H200), a re-run of the
thirty-eighth's winners (its result files were lost with the session) plus the shapes it left out:
causal attention at D64 with its heaviest query tiles launched first (loop_orders with heads
fastest and tile_reversals), forward at S1024-S8192 and backward at S2048, bf16 and fp16."""
import json


def shape(S, D, causal, B=4, H=32, Hkv=32):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}


three = {"consumer_groups": 3, "maxnreg": None, "diagonal_branch": True, "range_peel_tails": [True],
         "num_stages": 2, "block_sizes": [192, 128], "backend": "gluon"}
# heads fastest, then query tiles, then batch: within one batch the last (longest) query tiles of
# every head run first
by_batch = {"loop_orders": [[1, 0, 2]], "tile_reversals": [True]}
jobs = []
for dtype in ("bfloat16", "float16"):
    for S in (1024, 2048):
        jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(S, 64, True),
                     "variants": {"heavy first by batch": by_batch}})
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(4096, 64, True),
                 "from_shape": shape(2048, 64, True),
                 "variants": {"1g heavy first by batch": by_batch,
                              "3g heavy first by batch": {**three, **by_batch, "pid_type": "flat"}}})
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(8192, 64, True),
                 "variants": {"heavy first by batch": by_batch,
                              "heavy first by batch pd": {**by_batch, "pid_type": "persistent_dynamic"}}})
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(2048, 64, True),
                 "variants": {"heavy first by batch": {"loop_orders": [[1, 0, 2], [1, 0, 2]],
                                                       "tile_reversals": [True, False]}}})
json.dump(jobs, open("scratch/session39_jobs.json", "w"), indent=1)
print(len(jobs), sum(len(j["variants"]) for j in jobs))
