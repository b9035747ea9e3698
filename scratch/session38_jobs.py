"""Writes scratch/session38_jobs.json: the thirty-eighth session's config probe (H200): the D64 causal
forward with its key loop ended on a whole key tile (three groups), and the one-pass backward
(`dq_in_dkv`) at D64 and D128. That tunable lost (0.70-0.78x) and was reverted, so its variants
are now rejected by the config spec (notes/gluon_backend.md, "Thirty-eighth and thirty-ninth
sessions")."""
import json

def shape(S, D, causal, B=4, H=32, Hkv=32):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}

three = {"consumer_groups": 3, "maxnreg": None, "diagonal_branch": True, "range_peel_tails": [True],
         "num_stages": 2, "block_sizes": [192, 128], "backend": "gluon"}
jobs = []
for dtype in ("bfloat16", "float16"):
    for S in (1024, 2048, 4096, 8192):
        job = {"op": "attention_fwd", "dtype": dtype, "shape": shape(S, 64, True),
               "variants": {"3g 192x128 branch flat": {**three, "pid_type": "flat"},
                            "3g 192x128 branch pd": {**three, "pid_type": "persistent_dynamic"}}}
        if S == 4096:
            job["from_shape"] = shape(2048, 64, True)
        jobs.append(job)

def one_pass(n, m, warps, stages, **extra):
    return {"dq_in_dkv": True, "backend": "triton", "block_sizes": [64, 64, n, m], "num_warps": warps,
            "num_stages": stages, **extra}

bwd_variants = {
    "1pass 64x64 w4 s3": one_pass(64, 64, 4, 3),
    "1pass 128x64 w8 s2": one_pass(128, 64, 8, 2),
    "1pass 128x64 w8 s3": one_pass(128, 64, 8, 3),
    "1pass 128x32 w4 s3": one_pass(128, 32, 4, 3),
    "1pass 128x32 w8 s3": one_pass(128, 32, 8, 3),
}
for dtype in ("bfloat16",):
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(4096, 64, False), "variants": bwd_variants})
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(2048, 64, True),
                 "variants": {**bwd_variants, **{k + " branch": {**v, "dkv_diagonal_branch": True} for k, v in bwd_variants.items()}}})
    jobs.append({"op": "attention_bwd", "dtype": dtype, "shape": shape(4096, 128, False), "variants": bwd_variants})
json.dump(jobs, open("scratch/session38_jobs.json", "w"), indent=1)
print(len(jobs), sum(len(j["variants"]) for j in jobs))
