#!/bin/bash
# Thirty-fourth session, second run (H200): the second config probe (scratch/h200_attention_jobs_2.py),
# then the attention kernel tests and the Gluon tests on the GPU (the first step of STATUS).
set -u
start=$(date +%s)
mkdir -p $OUT/probe
OUT=$OUT/probe bash scratch/gpu_run_probe_parallel_warm.sh scratch/h200_attention_jobs_2.json tuned_configs/sm_90.json 2>&1 | tail -90
echo "probe: $(( $(date +%s) - start )) s"
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout -s TERM 420 python3 -m pytest -q -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark --timeout 300 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py 2>&1 | tail -25
echo "total: $(( $(date +%s) - start )) s"
