#!/bin/bash
# Forty-second session, second call: the persistent D128 backward with each kernel's ring depth
# (dq 3, dk/dv 4 stages) and sections of 4-16 heads longest first, both dtypes
# (scratch/session42_persistent_bwd_jobs_2.json); the backward GPU tests beside the compiles.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=scratch/session42_persistent_bwd_jobs_2.json
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  tests/dsl/test_gluon_backend.py -k "persistent_lowered_attention_backward or resident_stores" \
  > $OUT/gpu_tests_full.txt 2>&1; grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
WARM_PROCS=12 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm
wait
cat $OUT/gpu_tests.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
