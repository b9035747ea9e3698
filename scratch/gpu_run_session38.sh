#!/bin/bash
# Thirty-eighth session, one device call: the attention kernel tests on the GPU (in the background,
# while the probe's compiles fill the cache), then the config probe of scratch/session38_jobs.json.
set -u
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
( timeout 330 python3 -m pytest -q tests/kernels/test_attention.py -m "gpu or not gpu" -n 6 -p no:cacheprovider \
    -p no:benchmark --timeout 300 > $OUT/tests.log 2>&1; echo "tests rc $? after $(( $(date +%s) - start )) s" >> $OUT/tests.log ) &
WARM_PROCS=10 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session38_jobs.json tuned_configs/sm_90.json warm
wait
tail -3 $OUT/tests.log
echo "tests and warm-up: $(( $(date +%s) - start )) s"
bash scratch/gpu_run_probe_parallel_warm.sh scratch/session38_jobs.json tuned_configs/sm_90.json time
echo "total: $(( $(date +%s) - start )) s"
