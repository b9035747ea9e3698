#!/bin/bash
# Thirty-third session, second run (H100): `diagonal_branch` (the causal forward in one key loop,
# its mask under a branch). Warm-up compiles of the config probe over the H100 table's causal
# forward entries, then the Gluon forward tests and the attention kernel tests against float64,
# then the probe's timing alone.
set -u
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
JOBS=scratch/diagonal_branch_h100_jobs.json
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" "$TABLE" warm
timeout -s TERM 260 python3 -m pytest -q -m gpu -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py -k "lowered_attention_matches or persistent_lowered or test_forward or test_backward or strided or no_keys" 2>&1 | tail -8
echo "tests: $(( $(date +%s) - start )) s"
bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" "$TABLE" time 2>&1 | tail -45
echo "total: $(( $(date +%s) - start )) s"
