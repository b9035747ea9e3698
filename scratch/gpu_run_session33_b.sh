#!/bin/bash
# Thirty-third session, second run (H100): `diagonal_branch` (the causal forward in one key loop,
# its mask under a branch). Warm-up compiles of the config probe over the H100 table's causal
# forward entries, then the Gluon forward tests and the attention kernel tests against float64,
# then the probe's timing alone.
set -u
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
JOBS=scratch/diagonal_branch_h100_jobs.json
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
ls /tmp/warm/job_*.json | xargs -P 14 -I{} sh -c 'timeout 300 python3 tools/config_probe.py time {} --rounds 1 --table '"$TABLE"' --out {}.d > {}.log 2>&1'
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|rejected|differ" /tmp/warm/*.log | head -20
timeout -s TERM 260 python3 -m pytest -q -m gpu -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py -k "lowered_attention_matches or persistent_lowered or test_forward or test_backward or strided or no_keys" 2>&1 | tail -8
echo "tests: $(( $(date +%s) - start )) s"
timeout -s TERM 250 python3 tools/config_probe.py time "$JOBS" --rounds 5 --table "$TABLE" --out $OUT 2>&1 | grep -v Warning | tail -45
echo "total: $(( $(date +%s) - start )) s"
