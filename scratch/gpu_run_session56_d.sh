#!/bin/bash
# Fifty-sixth session's last call, on an H100: the GPU tests of the RMSNorm variants and public path
# (after this session's three H100 entries), the RMSNorm mixed-dtype probe at 64x4096, then the
# flag steps of scratch/session56_h100_row_flag_jobs_c.json (the bf16 softmax and float32 RMSNorm
# forward jobs half b did not reach) within the LIMIT seconds left.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout 150 python3 -m pytest -v -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 \
  tests/kernels/test_shipped_variants.py tests/runtime/test_api_rms_norm.py -k "rms" > $OUT/gpu_tests_verbose.txt 2>&1
echo "tests: $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -20
mkdir -p $OUT/mixed && OUT=$OUT/mixed timeout 90 python3 scratch/rms_norm_mixed_dtype_probe.py 64x4096 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -12
LIMIT=$(( ${LIMIT:-540} - ($(date +%s) - start) )) bash scratch/gpu_run_session56_flags.sh scratch/session56_h100_row_flag_jobs_c.json
echo "total: $(( $(date +%s) - start )) s"
