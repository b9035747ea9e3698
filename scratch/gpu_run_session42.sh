#!/bin/bash
# Forty-second session: the persistent backward's GPU tests (stores in their own buffers or in the
# tiles' resident slots, `resident_stores`) beside the probe's parallel compiles, then the config
# probe of persistent D128 backward grids (scratch/session42_persistent_bwd_jobs.json).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=scratch/session42_persistent_bwd_jobs.json
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 6 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  tests/dsl/test_gluon_backend.py -k "persistent_resident or persistent_lowered_attention_backward or resident_stores" \
  > $OUT/gpu_tests_full.txt 2>&1; grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
WARM_PROCS=9 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm
wait
cat $OUT/gpu_tests.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
