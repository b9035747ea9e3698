#!/bin/bash
# Thirty-ninth session, one device call: the Gluon back end tests on the GPU (in the background,
# while the probe's compiles fill the cache; the timing waits for both), then the config probe of scratch/session39_jobs.json.
set -u
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
( timeout 390 python3 -m pytest -q tests/dsl/test_gluon_backend.py -m "gpu or not gpu" -n 7 -p no:cacheprovider \
    -p no:benchmark --timeout 360 > $OUT/tests.log 2>&1; echo "tests rc $? after $(( $(date +%s) - start )) s" >> $OUT/tests.log ) &
WARM_PROCS=8 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session39_jobs.json tuned_configs/sm_90.json warm
wait
tail -3 $OUT/tests.log
echo "tests and warm-up: $(( $(date +%s) - start )) s"
bash scratch/gpu_run_probe_parallel_warm.sh scratch/session39_jobs.json tuned_configs/sm_90.json time
echo "total: $(( $(date +%s) - start )) s"
