#!/bin/bash
# Forty-third session: per-kernel times of attention_bwd, under config variants
# (scratch/bwd_variant_kernel_split.py) or source patches (scratch/bwd_source_patch_split.py), their
# compiles first in parallel (one process per job and variant or patch, at B1 H2).
#   bash scratch/gpu_run_session43.sh variants|patches JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
MODE=$1; JOBS=$2
SCRIPT=scratch/bwd_variant_kernel_split.py; [ "$MODE" = patches ] && SCRIPT=scratch/bwd_source_patch_split.py
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
mkdir -p /tmp/warm
python3 - "$JOBS" "$MODE" <<'PY'
import json, sys
jobs, mode = json.load(open(sys.argv[1])), sys.argv[2]
for i, job in enumerate(jobs):
    if mode == "patches":
        for j, patch in enumerate(["base", *job["patches"]]):
            json.dump([{**job, "patches": [] if patch == "base" else [patch]}], open(f"/tmp/warm/job_{i}_{j}.json", "w"))
        continue
    for j, (label, overrides) in enumerate({"tuned": {}, **job["variants"]}.items()):
        small = {**job["shape"], "B": 1, "H": 2, "Hkv": 2}
        json.dump([{**job, "shape": small, "from_shape": job.get("from_shape", job["shape"]), "variants": {label: overrides}}],
                  open(f"/tmp/warm/job_{i}_{j}.json", "w"))
PY
WARM=""; [ "$MODE" = patches ] && WARM="--warm"
start=$(date +%s)
ls /tmp/warm/job_*.json | xargs -P 14 -I{} sh -c "timeout 300 python3 $SCRIPT {} $WARM > {}.log 2>&1"
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|differ|Error" /tmp/warm/*.log | head
timeout 420 python3 $SCRIPT "$JOBS" 2>&1 | grep -v -i warn | tee $OUT/$MODE.txt
