"""Config-probe jobs for `lazy_rescale` (thirty-fourth session, unmeasured then): every attention
forward entry of the sm_90 tables (the H200's and the H100's), with the tunable on. Writes
scratch/lazy_rescale_jobs.json; run it with scratch/gpu_run_probe_parallel_warm.sh against the
table of the GPU at hand."""
import json

jobs, seen = [], set()
for path in ("tuned_configs/sm_90.json", "tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"):
    for entry in json.load(open(path))["entries"]:
        key = (entry["op"], entry["dtype"], json.dumps(entry["shape"], sort_keys=True))
        if entry["op"] != "attention_fwd" or key in seen:
            continue
        seen.add(key)
        jobs.append({"op": entry["op"], "dtype": entry["dtype"], "shape": entry["shape"],
                     "variants": {"lazy rescale": {"lazy_rescale": True}}})
json.dump(jobs, open("scratch/lazy_rescale_jobs.json", "w"), indent=1)
print(len(jobs), "jobs")
