#!/bin/bash
# Forty-third session: per-kernel times of attention_bwd under source patches, the compiles first in
# parallel (one process per job and patch, at B1 H2).   bash scratch/gpu_run_session43_patches.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=$1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
mkdir -p /tmp/warm
python3 - "$JOBS" <<'PY'
import json, sys
for i, job in enumerate(json.load(open(sys.argv[1]))):
    for j, patch in enumerate(["base", *job["patches"]]):
        json.dump([{**job, "patches": [] if patch == "base" else [patch]}], open(f"/tmp/warm/patch_{i}_{j}.json", "w"))
PY
start=$(date +%s)
ls /tmp/warm/patch_*.json | xargs -P 14 -I{} sh -c 'timeout 300 python3 scratch/bwd_source_patch_split.py {} --warm > {}.log 2>&1'
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "Error|error" /tmp/warm/*.log | head
timeout 420 python3 scratch/bwd_source_patch_split.py "$JOBS" 2>&1 | grep -v -i warn | tee $OUT/patch_split.txt
