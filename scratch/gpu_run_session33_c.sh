#!/bin/bash
# Thirty-third session, third run (H100): the backward's masks under branches (dq_diagonal_branch,
# dkv_diagonal_branch). The Gluon backward tests and the attention kernel backward tests against
# float64 beside the config probe's warm-up compiles, then the probe's timing alone.
set -u
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
JOBS=scratch/diagonal_branch_bwd_h100_jobs.json
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
WARM_PROCS=6 bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" "$TABLE" warm &
timeout -s TERM 200 python3 -m pytest -q -m gpu -n 10 -p no:cacheprovider -p no:benchmark --timeout 180 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py -k "backward" 2>&1 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
wait
bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" "$TABLE" time 2>&1 | tail -30
echo "total: $(( $(date +%s) - start )) s"
