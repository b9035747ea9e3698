#!/bin/bash
# `lazy_rescale` on a GPU (prepared in the thirty-fourth session, which had no device time left):
# its Gluon tests and the attention kernel forward tests beside the probe's warm-up compiles, then
# the config probe of every attention forward entry with the tunable on.
# Usage: bash scratch/gpu_run_lazy_rescale.sh TABLE (tuned_configs/sm_90.json on an H200,
# tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json on an H100)
set -u
TABLE=$1
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
WARM_PROCS=8 bash scratch/gpu_run_probe_parallel_warm.sh scratch/lazy_rescale_jobs.json "$TABLE" warm &
timeout -s TERM 240 python3 -m pytest -q -m "gpu or not gpu" -n 6 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py -k "lazy or forward" 2>&1 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
wait
bash scratch/gpu_run_probe_parallel_warm.sh scratch/lazy_rescale_jobs.json "$TABLE" time 2>&1 | tail -70
echo "total: $(( $(date +%s) - start )) s"
