#!/bin/bash
# Forty-third session: per-kernel times of attention_bwd variants, their compiles first in
# parallel (one process per variant of the first job with a distinct config fills Triton's cache).
#   bash scratch/gpu_run_session43.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=$1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
mkdir -p /tmp/warm
python3 - "$JOBS" <<'PY'
import json, sys
for i, job in enumerate(json.load(open(sys.argv[1]))):
    for j, (label, overrides) in enumerate({"tuned": {}, **job["variants"]}.items()):
        small = {**job["shape"], "B": 1, "H": 2, "Hkv": 2}
        json.dump([{**job, "shape": small, "from_shape": job.get("from_shape", job["shape"]), "variants": {label: overrides}}],
                  open(f"/tmp/warm/job_{i}_{j}.json", "w"))
PY
start=$(date +%s)
ls /tmp/warm/job_*.json | xargs -P 14 -I{} sh -c 'timeout 300 python3 scratch/bwd_variant_kernel_split.py {} > {}.log 2>&1'
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|differ" /tmp/warm/*.log | head
timeout 400 python3 scratch/bwd_variant_kernel_split.py "$JOBS" 2>&1 | grep -v Warning | tee $OUT/split.txt
