"""Thirty-fourth session: config-probe jobs for the H200 table's attention forward entries (the
diagonal_branch / relative_masks knobs measured on the H100 in the thirty-third session, and the
H100's Gluon D64 config). Writes scratch/h200_attention_fwd_jobs.json."""
import json

H200 = json.load(open("tuned_configs/sm_90.json"))
H100 = json.load(open("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"))


def shape(B, H, Hkv, S, D, causal):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}


def config(table, dtype, s):
    return next((e["config"] for e in table["entries"]
                 if (e["op"], e["dtype"], e["shape"]) == ("attention_fwd", dtype, s)), None)


BRANCH = {"diagonal_branch": True, "relative_masks": True}
PLAIN = {"diagonal_branch": True, "relative_masks": False}
h100_d64 = config(H100, "bfloat16", shape(4, 32, 32, 2048, 64, True))
jobs = []
for dtype in ("bfloat16", "float16"):
    for s in (shape(1, 32, 8, 16384, 128, True), shape(4, 32, 32, 4096, 128, True), shape(8, 32, 8, 1024, 128, True)):
        variants = {"branch": BRANCH, "branch, plain masks": PLAIN}
        other = config(H100, "bfloat16", s)
        if other is not None and other != config(H200, dtype, s):
            variants["h100 config"] = other
        jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": s, "variants": variants})
    # no H200 entry: the runtime takes the H100 table's (diagonal_branch) entry
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(4, 32, 32, 1024, 128, True),
                 "variants": {"h200 B8 Hkv8 config": config(H200, dtype, shape(8, 32, 8, 1024, 128, True)),
                              "h200 B8 Hkv8 config, branch": {**config(H200, dtype, shape(8, 32, 8, 1024, 128, True)), **BRANCH},
                              "flat grid": {"pid_type": "flat", "tile_reversals": [True]}}})
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(4, 32, 32, 2048, 128, True),
                 "from_shape": shape(4, 32, 32, 4096, 128, True),
                 "variants": {"branch": BRANCH, "h100 S4096 config": config(H100, "bfloat16", shape(4, 32, 32, 4096, 128, True))}})
    for s, start in ((shape(4, 32, 32, 2048, 64, True), None), (shape(4, 32, 32, 1024, 64, True), shape(4, 32, 32, 2048, 64, True)),
                     (shape(16, 16, 16, 512, 64, False), None)):
        variants = {"h100 gluon": h100_d64}
        if s["causal"]:
            variants["triton, branch"] = {"diagonal_branch": True}
            variants["h100 gluon, branch"] = {**h100_d64, **BRANCH}
        job = {"op": "attention_fwd", "dtype": dtype, "shape": s, "variants": variants}
        if start:
            job["from_shape"] = start
        jobs.append(job)
    s = shape(4, 32, 32, 4096, 128, False)
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": s,
                 "variants": {"h100 config": config(H100, "bfloat16", s)}})
json.dump(jobs, open("scratch/h200_attention_fwd_jobs.json", "w"), indent=1)
print(len(jobs), "jobs,", sum(len(j["variants"]) + 1 for j in jobs), "configs")
