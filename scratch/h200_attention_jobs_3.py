"""Thirty-fourth session, third H200 probe: the D64 non-causal forward (0.87-0.94x of cuDNN in the
H200 report of 2026-11-27) under Triton and Gluon variants. Writes scratch/h200_attention_jobs_3.json."""
import json

H200 = json.load(open("tuned_configs/sm_90.json"))
RANGES = ("range_num_stages", "range_peel_tails", "range_unroll_factors", "range_warp_specializes")


def shape(B, H, Hkv, S, D, causal):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}


causal_d64 = next(e["config"] for e in H200["entries"] if (e["op"], e["dtype"], e["shape"])
                  == ("attention_fwd", "bfloat16", shape(4, 32, 32, 2048, 64, True)))
gluon = {**causal_d64, "indexing": ["pointer"] * 5, "load_eviction_policies": [""] * 3,
         **{name: causal_d64[name][:1] for name in RANGES}}
variants = {
    "triton stages 3": {"num_stages": 3, "range_num_stages": [3]},
    "triton stages 5": {"num_stages": 5, "range_num_stages": [5]},
    "triton persistent_interleaved": {"pid_type": "persistent_interleaved"},
    "triton 4 warps": {"num_warps": 4},
    "triton 128x128": {"block_sizes": [128, 128], "num_stages": 3, "range_num_stages": [3]},
    "gluon cap80 persistent_dynamic": {**gluon, "pid_type": "persistent_dynamic"},
    "gluon cap88": {**gluon, "maxnreg": 88},
    "gluon cap80 stages 2": {**gluon, "num_stages": 2},
    "gluon cap80 stages 4": {**gluon, "num_stages": 4},
}
jobs = []
for dtype in ("bfloat16", "float16"):
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(16, 16, 16, 512, 64, False), "variants": variants})
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(4, 32, 32, 4096, 64, False),
                 "from_shape": shape(16, 16, 16, 512, 64, False), "variants": variants})
json.dump(jobs, open("scratch/h200_attention_jobs_3.json", "w"), indent=1)
print(len(jobs), "jobs,", sum(len(j["variants"]) + 1 for j in jobs), "configs")
