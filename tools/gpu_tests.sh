#!/usr/bin/env bash
# Runs the test suites on a CUDA GPU with real Triton (HK_TEST_DEVICE=cuda); logs go to ${OUT:-.out}.
set -u
out=${OUT:-.out}
mkdir -p "$out"
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 HK_FAILURE_LOG="$out/failures.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/device.txt"
python3 -m pytest -q -m "gpu or not gpu" -n "${WORKERS:-8}" -p no:cacheprovider -p no:benchmark --timeout 900 -rf --durations=25 \
    ${@:-tests/dsl tests/kernels tests/runtime} 2>&1 | tee "$out/gpu_tests.log" | tail -60
