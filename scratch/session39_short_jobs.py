"""Writes scratch/session39_short_jobs.json: the thirty-ninth session's second probe (H200): the
short non-causal D64 rows the H200 report still loses to cuDNN (B4 H32 S1024, new entry from the
S4096 one; B16 H16 S512), each against the other tile shapes: one warpgroup over 64x64 tiles,
two over 128x128, three over 192x128 or 192x64, flat or persistent."""
import json


def shape(S, B=4, H=32):
    return {"B": B, "H": H, "Hkv": H, "Sq": S, "Sk": S, "D": 64, "causal": False}


one = {"block_sizes": [64, 64], "consumer_groups": 1, "maxnreg": 80, "num_stages": 3, "pid_type": "flat"}
two = {"block_sizes": [128, 128], "consumer_groups": 2, "maxnreg": None, "num_stages": 2}
three = {"block_sizes": [192, 128], "consumer_groups": 3, "maxnreg": None, "num_stages": 2}
jobs = []
for dtype in ("bfloat16", "float16"):
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(1024), "from_shape": shape(4096),
                 "variants": {"1g 64x64": one, "1g 64x64 pd": {**one, "pid_type": "persistent_dynamic"},
                              "2g 128x128 pd": {**two, "pid_type": "persistent_dynamic"},
                              "2g 128x128": {**two, "pid_type": "flat"},
                              "3g flat": {**three, "pid_type": "flat"},
                              "3g 192x64 pd": {**three, "block_sizes": [192, 64], "pid_type": "persistent_dynamic"}}})
    jobs.append({"op": "attention_fwd", "dtype": dtype, "shape": shape(512, B=16, H=16),
                 "variants": {"1g 64x64": one, "1g 64x64 pd": {**one, "pid_type": "persistent_dynamic"},
                              "2g 128x128": {**two, "pid_type": "flat"},
                              "3g pd": {**three, "pid_type": "persistent_dynamic"},
                              "3g flat": {**three, "pid_type": "flat"}}})
json.dump(jobs, open("scratch/session39_short_jobs.json", "w"), indent=1)
print(len(jobs), sum(len(j["variants"]) for j in jobs))
