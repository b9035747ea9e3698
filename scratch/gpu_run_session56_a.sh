#!/bin/bash
# Fifty-sixth session's first call, on an H100: the GPU tests of the RMSNorm variants and public
# path (the 64x4096 entry's host-finish variants among them) within TESTS_S, then the report
# (scratch/gpu_run_session54_b.sh) within REPORT_S. Carry [".whl"]; set HK_COMMIT.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout ${TESTS_S:-170} python3 -m pytest -v -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 \
  tests/kernels/test_shipped_variants.py tests/runtime/test_api_rms_norm.py -k "rms" > $OUT/gpu_tests_verbose.txt 2>&1
echo "tests: $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -20
bash scratch/gpu_run_session54_b.sh
echo "total: $(( $(date +%s) - start )) s"
