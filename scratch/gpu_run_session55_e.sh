#!/bin/bash
# Fifty-fifth session's verification call, on an H100: the GPU tests of the RMSNorm variants and
# public path (the new reload_rows dtype variants included), then the RMSNorm mixed-dtype probe.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout ${TESTS_S:-200} python3 -m pytest -v -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 \
  tests/kernels/test_shipped_variants.py tests/runtime/test_api_rms_norm.py -k "rms" > $OUT/gpu_tests_verbose.txt 2>&1
echo "tests: $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -20
timeout ${PROBE_S:-200} python3 scratch/rms_norm_mixed_dtype_probe.py 2>&1 | grep -v -i "warn\|inductor\|important use" | tail -20
echo "total: $(( $(date +%s) - start )) s"
