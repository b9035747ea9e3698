#!/bin/bash
# Thirty-fifth session, one device call: the RMSNorm and control-flow GPU tests beside the warm-up
# compiles of the backward tile-order probe, then the RMSNorm backward 1x4096 probe and the
# backward tile-order probe (scratch/rms_bwd_one_row_jobs.json, h200_bwd_order_jobs.json).
set -u
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
WARM_PROCS=10 bash scratch/gpu_run_probe_parallel_warm.sh scratch/h200_bwd_order_jobs.json tuned_configs/sm_90.json warm &
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 5 -p no:cacheprovider -p no:benchmark --timeout 150 -rf \
  tests/kernels/test_rms_norm.py tests/runtime/test_api_rms_norm.py tests/dsl/test_control_flow.py 2>&1 | grep -E "passed|failed|^FAILED" | tail -8
echo "tests: $(( $(date +%s) - start )) s"
wait
mkdir -p $OUT/rms $OUT/order
timeout 120 python3 tools/config_probe.py time scratch/rms_bwd_one_row_jobs.json --rounds 5 --table tuned_configs/sm_90.json --out $OUT/rms 2>&1 | grep -v Warn | tail -20
timeout 240 python3 tools/config_probe.py time scratch/h200_bwd_order_jobs.json --rounds 5 --table tuned_configs/sm_90.json --out $OUT/order 2>&1 | grep -v Warn | tail -30
echo "total: $(( $(date +%s) - start )) s"
