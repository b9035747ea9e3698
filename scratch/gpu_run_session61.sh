#!/bin/bash
# Sixty-first session, one call on whichever GPU comes: the GPU tests of the DSL features of the
# fifty-eighth to sixty-first sessions (split/join and splitting views, nested tensors, block-size
# products, atomics, unrolled loops, inline Triton, Helion's names, torch functions, integer and
# float `//` / `%` as PyTorch rounds them), the softmax kernel and API tests (its split-rows kernel
# now floors its ticket's `//` and `%`), then on an H100 with over 330 s left the 4/8-row RMSNorm
# backward probe (scratch/gpu_run_probe_apply_verify.sh; table and modules back under $OUT/after).
#   LIMIT=560 bash scratch/gpu_run_session61.sh   (no carry)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark \
  --timeout 120 -rf --tb=short tests/dsl/test_split_join.py tests/dsl/test_nested_tensors.py \
  tests/dsl/test_block_size_products.py tests/dsl/test_sync.py tests/dsl/test_unrolled_loops.py \
  tests/dsl/test_inline_triton.py tests/dsl/test_compat_names.py tests/dsl/test_stack_and_merged_dims.py \
  tests/dsl/test_torch_functions.py tests/dsl/test_integer_division.py > $OUT/dsl_new.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/dsl_new.txt | cut -c1-300 | tail -14
echo "dsl: $(( $(date +%s) - start )) s"
HK_TEST_DEVICE=cuda timeout 150 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark \
  --timeout 120 -rf --tb=short tests/kernels/test_softmax.py tests/runtime/test_api_softmax.py > $OUT/softmax.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/softmax.txt | cut -c1-300 | tail -10
left=$(( ${LIMIT:-560} - ($(date +%s) - start) )); echo "left: $left s"
if [[ "$gpu" == *H100* && $left -gt 330 ]]; then
  ROWS="3 4 5 8 16 64" bash scratch/gpu_run_probe_apply_verify.sh scratch/session59_h100_rms_bwd_4_8_rows_jobs.json
fi
echo "total: $(( $(date +%s) - start )) s"
