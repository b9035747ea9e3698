#!/bin/bash
# Forty-second session, first and second calls: GPU tests of the persistent backward beside the
# config probe's parallel compiles, then the probe. Usage:
#   bash scratch/gpu_run_session42.sh JOBS TESTS_K [WARM_PROCS]
# first call:  scratch/session42_persistent_bwd_jobs.json
#              "persistent_resident or persistent_lowered_attention_backward or resident_stores" 9
# second call: scratch/session42_persistent_bwd_jobs_2.json
#              "persistent_lowered_attention_backward or resident_stores" 12
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=$1; TESTS_K=$2
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  tests/dsl/test_gluon_backend.py -k "$TESTS_K" \
  > $OUT/gpu_tests_full.txt 2>&1; grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
WARM_PROCS=${3:-9} bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm
wait
cat $OUT/gpu_tests.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
