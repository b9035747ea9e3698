"""Thirty-fourth session, second H200 probe: the first probe's winners in fp16, Gluon for the D64
non-causal forward, the D128 non-causal forward at S1024, and the backward under the H100's configs
and the diagonal branches. Writes scratch/h200_attention_jobs_2.json."""
import json

H200 = json.load(open("tuned_configs/sm_90.json"))
H100 = json.load(open("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"))
RANGES = ("range_num_stages", "range_peel_tails", "range_unroll_factors", "range_warp_specializes")


def shape(B, H, Hkv, S, D, causal):
    return {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}


def config(table, op, dtype, s):
    return next((e["config"] for e in table["entries"] if (e["op"], e["dtype"], e["shape"]) == (op, dtype, s)), None)


def without_loops(cfg, dropped):
    """The backward's branch knobs merge device loops: drop those loops' entries of the range lists."""
    assert set(cfg["indexing"]) == {"pointer"} and set(cfg["load_eviction_policies"]) == {""}
    return {name: [v for i, v in enumerate(cfg[name]) if i not in dropped] for name in RANGES}


BRANCH = {"diagonal_branch": True, "relative_masks": True}
h100_d64 = config(H100, "attention_fwd", "bfloat16", shape(4, 32, 32, 2048, 64, True))
d64_plain = {**h100_d64, "indexing": ["pointer"] * 5, "load_eviction_policies": [""] * 3,
             **{name: h100_d64[name][:1] for name in RANGES}}
jobs = []
fwd = "attention_fwd"
s = shape(1, 32, 8, 16384, 128, True)
jobs.append({"op": fwd, "dtype": "float16", "shape": s, "variants": {"h100 config": config(H100, fwd, "bfloat16", s)}})
jobs.append({"op": fwd, "dtype": "bfloat16", "shape": s, "variants": {"h100 config": config(H100, fwd, "bfloat16", s),
                                                                      "h100 config, branch": {**config(H100, fwd, "bfloat16", s), **BRANCH}}})
for s in (shape(4, 32, 32, 4096, 128, True), shape(8, 32, 8, 1024, 128, True)):
    jobs.append({"op": fwd, "dtype": "float16", "shape": s, "variants": {"h100 config": config(H100, fwd, "bfloat16", s)}})
jobs.append({"op": fwd, "dtype": "float16", "shape": shape(4, 32, 32, 2048, 128, True), "from_shape": shape(4, 32, 32, 4096, 128, True),
             "variants": {"h100 S4096 config": config(H100, fwd, "bfloat16", shape(4, 32, 32, 4096, 128, True))}})
jobs.append({"op": fwd, "dtype": "float16", "shape": shape(4, 32, 32, 2048, 64, True), "variants": {"h100 gluon": h100_d64}})
jobs.append({"op": fwd, "dtype": "float16", "shape": shape(4, 32, 32, 1024, 64, True), "from_shape": shape(4, 32, 32, 2048, 64, True),
             "variants": {"h100 gluon": h100_d64, "h100 gluon, branch": {**h100_d64, **BRANCH}}})
for dtype in ("bfloat16", "float16"):
    for s, start in ((shape(16, 16, 16, 512, 64, False), None), (shape(4, 32, 32, 4096, 64, False), shape(16, 16, 16, 512, 64, False))):
        job = {"op": fwd, "dtype": dtype, "shape": s, "variants": {
            "gluon 64x64 cg1 cap80": d64_plain,
            "gluon 64x64 cg1": {**d64_plain, "maxnreg": None},
            "gluon 128x64 cg2": {**d64_plain, "maxnreg": None, "block_sizes": [128, 64], "consumer_groups": 2, "num_stages": 2},
            "gluon 128x128 cg2": {**d64_plain, "maxnreg": None, "block_sizes": [128, 128], "consumer_groups": 2, "num_stages": 2}}}
        if start:
            job["from_shape"] = start
        jobs.append(job)
s4096 = shape(4, 32, 32, 4096, 128, False)
jobs.append({"op": fwd, "dtype": "bfloat16", "shape": shape(4, 32, 32, 1024, 128, False), "from_shape": s4096,
             "variants": {"h100 config": config(H100, fwd, "bfloat16", s4096),
                          "persistent_dynamic, l2 8": {"pid_type": "persistent_dynamic", "l2_groupings": [8], "loop_orders": [[1, 0, 2]]}}})
bwd = "attention_bwd"
for s in (shape(1, 32, 8, 16384, 128, True), shape(4, 32, 32, 4096, 128, True), shape(8, 32, 8, 1024, 128, True),
          shape(4, 32, 32, 4096, 128, False)):
    tuned = config(H200, bwd, "bfloat16", s)
    other = config(H100, bwd, "bfloat16", s)
    variants = {}
    if other is not None and other != tuned:
        variants["h100 config"] = other
    if s["causal"]:
        variants["dq branch"] = {"dq_diagonal_branch": True, **without_loops(tuned, {1})}
        variants["dkv branch"] = {"dkv_diagonal_branch": True, **without_loops(tuned, {3})}
        variants["both branches"] = {"dq_diagonal_branch": True, "dkv_diagonal_branch": True, **without_loops(tuned, {1, 3})}
        if other is not None:
            variants["h100 config, dq branch"] = {**other, "dq_diagonal_branch": True, **without_loops(other, {1})}
    jobs.append({"op": bwd, "dtype": "bfloat16", "shape": s, "variants": variants})
json.dump(jobs, open("scratch/h200_attention_jobs_2.json", "w"), indent=1)
print(len(jobs), "jobs,", sum(len(j["variants"]) + 1 for j in jobs), "configs")
