#!/bin/bash
# Thirty-third session, third run (H100): the backward's masks under branches (dq_diagonal_branch,
# dkv_diagonal_branch). The Gluon backward tests and the attention kernel backward tests against
# float64 beside the config probe's warm-up compiles, then the probe's timing alone.
set -u
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
JOBS=scratch/diagonal_branch_bwd_h100_jobs.json
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
mkdir -p /tmp/warm
python3 - "$JOBS" <<'PY'
import json, sys
for i, job in enumerate(json.load(open(sys.argv[1]))):
    for j, (label, overrides) in enumerate(job["variants"].items()):
        json.dump([{**job, "variants": {label: overrides}}], open(f"/tmp/warm/job_{i}_{j}.json", "w"))
PY
start=$(date +%s)
(ls /tmp/warm/job_*.json | xargs -P 6 -I{} sh -c 'timeout 300 python3 tools/config_probe.py time {} --rounds 1 --table '"$TABLE"' --out {}.d > {}.log 2>&1') &
timeout -s TERM 200 python3 -m pytest -q -m gpu -n 10 -p no:cacheprovider -p no:benchmark --timeout 180 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py -k "backward" 2>&1 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
wait
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|rejected|differ" /tmp/warm/*.log | head -20
timeout -s TERM 200 python3 tools/config_probe.py time "$JOBS" --rounds 5 --table "$TABLE" --out $OUT 2>&1 | grep -v Warning | tail -30
echo "total: $(( $(date +%s) - start )) s"
