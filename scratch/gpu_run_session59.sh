#!/bin/bash
# Fifty-ninth session, one call on whichever GPU comes: the GPU tests of the DSL's split/join, nested
# tensor and block-size-product features, then on an H100 the 4- and 8-row RMSNorm backward probe
# (scratch/gpu_run_probe_apply_verify.sh: applied, checked, table back under $OUT/after) and the
# H100's float32 row flag steps in what time is left (if over 150 s); on an H200 its queued flag steps (first half).
#   LIMIT=560 bash scratch/gpu_run_session59.sh   (carry [".cache_carry"])
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 180 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark \
  --timeout 120 -rf --tb=short tests/dsl/test_split_join.py tests/dsl/test_nested_tensors.py \
  tests/dsl/test_block_size_products.py tests/dsl/test_sync.py tests/dsl/test_unrolled_loops.py \
  tests/dsl/test_inline_triton.py tests/dsl/test_compat_names.py > $OUT/dsl_new.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/dsl_new.txt | cut -c1-300 | tail -12
if [[ "$gpu" == *H100* ]]; then
  ROWS="3 4 5 8 16 64" bash scratch/gpu_run_probe_apply_verify.sh scratch/session59_h100_rms_bwd_4_8_rows_jobs.json
  left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
  [ $left -gt 150 ] && LIMIT=$left PREFILLED=.cache_carry/h100_rest_flags.tgz \
    bash scratch/gpu_run_session56_flags.sh scratch/session56_h100_row_flag_jobs_rest.json
else
  LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - start) )) TABLE=tuned_configs/sm_90.json \
    PREFILLED=.cache_carry/h200_flags.tgz bash scratch/gpu_run_session56_flags.sh scratch/session56_h200_row_flag_jobs_a.json
fi
echo "total: $(( $(date +%s) - start )) s"
