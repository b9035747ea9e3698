#!/bin/bash
# One device call: GPU tests in the background while a config probe's compiles fill Triton's cache,
# then (once both are done, so the tests do not share the GPU with the timing) the probe's timing.
# Usage: bash scratch/gpu_run_tests_then_probe.sh TEST_FILE JOBS [TEST_TIMEOUT_S (390)]
# (the thirty-eighth session: tests/kernels/test_attention.py with scratch/session38_jobs.json and
# tests/dsl/test_gluon_backend.py with scratch/session38_lpt_jobs.json; the thirty-ninth: the Gluon
# tests with scratch/session39_jobs.json).
set -u
TESTS=$1; JOBS=$2; LIMIT=${3:-390}
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
( timeout $LIMIT python3 -m pytest -q "$TESTS" -m "gpu or not gpu" -n 7 -p no:cacheprovider \
    -p no:benchmark --timeout $(( LIMIT - 30 )) > $OUT/tests.log 2>&1; echo "tests rc $? after $(( $(date +%s) - start )) s" >> $OUT/tests.log ) &
WARM_PROCS=8 bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" tuned_configs/sm_90.json warm
wait
tail -3 $OUT/tests.log
echo "tests and warm-up: $(( $(date +%s) - start )) s"
bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" tuned_configs/sm_90.json time
echo "total: $(( $(date +%s) - start )) s"
