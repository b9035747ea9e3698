#!/bin/bash
# After the forty-third session: the GPU case of the persistent backward in the table's peeled form
# (ragged lengths), beside the warm-up compiles of the peel probe of other entries, then the probe.
#   bash scratch/gpu_run_peel_followup.sh [JOBS]
# JOBS: scratch/session43_peel_other_jobs.json (default), or on an H100
# scratch/session43_h100_peel_jobs.json.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=${1:-scratch/session43_peel_other_jobs.json}
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  tests/dsl/test_gluon_backend.py -k "persistent_lowered_attention_backward" > $OUT/gpu_tests_full.txt 2>&1
 grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
WARM_PROCS=9 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm
wait
cat $OUT/gpu_tests.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
