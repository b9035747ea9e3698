#!/bin/bash
# Forty-third session, last call: the attention kernel and API tests on the GPU with the peeled
# causal dk/dv entries, then the D128 backward against SDPA's cuDNN backend through the public API.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark --timeout 190 -rf \
  tests/kernels/test_attention.py tests/runtime/test_api_attention.py 2>&1 | grep -E "passed|failed|^FAILED" | tail -10 | tee $OUT/gpu_tests.txt
timeout 220 python3 scratch/bwd_vs_cudnn.py 2>&1 | grep -v -i warn | tee $OUT/bwd_vs_cudnn.txt
