#!/bin/bash
# Fifty-third session's last call: the RMSNorm mixed-dtype probe at the small shapes whose backward
# variants did not fit the shared memory before tools/fit_dtype_variants.py, then the GPU tests of
# the RMSNorm backward's shipped variants and of the public RMSNorm path.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout ${PROBE_S:-80} python3 scratch/rms_norm_mixed_dtype_probe.py 64x4096 8x4096 4096x768 2>&1 | grep -v -i "warn\|inductor\|important use" | tail -12
echo "probe: $(( $(date +%s) - start )) s"
timeout ${TESTS_S:-120} python3 -m pytest -v -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 100 \
  tests/kernels/test_shipped_variants.py tests/runtime/test_api_rms_norm.py -k "rms" > $OUT/gpu_tests_verbose.txt 2>&1
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -20
echo "total: $(( $(date +%s) - start )) s"
