"""Writes scratch/rms_bwd_h200_jobs.json: the RMSNorm backward at 16384x{4096,8192,16384} bf16 on an
H200 (81.9% / 88.1% / 84.1% of copy in h200/RESULTS.md, bar 90%), under the H100 table's configs
for those shapes (90.0% / 93.1% / 96.4% there) and single steps around the H200's own."""
import json

h100 = json.load(open("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"))


def h100_config(n):
    for e in h100["entries"]:
        if e["op"] == "rms_norm_bwd" and e["dtype"] == "bfloat16" and e["shape"] == {"M": 16384, "N": n}:
            return e["config"]
    return None


STEPS = {"w8": {"num_warps": 8}, "w32": {"num_warps": 32}, "s1": {"num_stages": 1}, "s3": {"num_stages": 3},
         "interleave off": {"interleave_rows": False}, "interleave on": {"interleave_rows": True},
         "reload rows": {"reload_rows": True}, "no reload": {"reload_rows": False},
         "264 partials": {"dweight_partials": 264}, "sum pass": {"finish_dweight": "sum_pass"}}
jobs = []
for n in (4096, 8192, 16384):
    variants = dict(STEPS)
    if h100_config(n):
        variants["h100 config"] = h100_config(n)
    jobs.append({"op": "rms_norm_bwd", "dtype": "bfloat16", "shape": {"M": 16384, "N": n}, "variants": variants})
with open("scratch/rms_bwd_h200_jobs.json", "w") as fh:
    json.dump(jobs, fh, indent=1)
