#!/bin/bash
# Forty-second session, third call: the attention kernel and API tests on the GPU with the new
# persistent D128 backward entries, the D128 backward against SDPA's cuDNN backend through the
# public API (scratch/bwd_vs_cudnn.py), then a probe of persistent grids at three D64 backward
# entries (scratch/session42_d64_bwd_jobs.json).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=scratch/session42_d64_bwd_jobs.json
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
WARM_PROCS=4 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm > $OUT/warm.txt 2>&1 &
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark --timeout 190 -rf \
  tests/kernels/test_attention.py tests/runtime/test_api_attention.py 2>&1 | grep -E "passed|failed|^FAILED" | tail -10 | tee $OUT/gpu_tests.txt
wait
timeout 200 python3 scratch/bwd_vs_cudnn.py 2>&1 | grep -v -i warn | tee $OUT/bwd_vs_cudnn.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
