# The full GPU suite (every mark) on the working tree
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 570 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 300 -rf tests/kernels tests/dsl tests/runtime 2>&1 | grep -E "passed|failed|^FAILED|^ERROR" | tail -30 | tee $OUT/gpu_suite.txt
