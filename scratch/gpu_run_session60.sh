#!/bin/bash
# Sixtieth session, one short call on whichever GPU comes (what little device budget the refused
# starts left): the GPU tests of the DSL features of the fifty-eighth to sixtieth sessions
# (split/join and splitting views, nested tensors, block-size products, the atomics, unrolled
# loops, inline Triton, Helion's names). About 200 s with a fresh Triton cache.
#   bash scratch/gpu_run_session60.sh   (no carry)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark \
  --timeout 120 -rf --tb=short tests/dsl/test_split_join.py tests/dsl/test_nested_tensors.py \
  tests/dsl/test_block_size_products.py tests/dsl/test_sync.py tests/dsl/test_unrolled_loops.py \
  tests/dsl/test_inline_triton.py tests/dsl/test_compat_names.py tests/dsl/test_stack_and_merged_dims.py \
  tests/dsl/test_torch_functions.py > $OUT/dsl_new.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/dsl_new.txt | cut -c1-300 | tail -14
echo "total: $(( $(date +%s) - start )) s"
