#!/bin/bash
# Sixty-third session, second call: the first (gpu_run_session63.sh) ran out of its test limit with
# four failures unnamed. Each test's result is now written as it ends (-v): the new DSL tests, the
# shipped attention and softmax modules (combine functions now defined once per module), then the
# lowered (Gluon) attention forward and backward against float64, until the limit.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 100 python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 90 -rf --tb=short tests/dsl/test_elementary.py tests/dsl/test_reductions.py tests/dsl/test_ordering.py \
  tests/dsl/test_stack_and_merged_dims.py tests/dsl/test_torch_functions.py > $OUT/tests_dsl.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests_dsl.txt | cut -c1-300 | tail -24
echo "dsl tests: $(( $(date +%s) - start )) s"
HK_TEST_DEVICE=cuda timeout 70 python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 60 -rf --tb=short tests/kernels/test_attention.py tests/kernels/test_softmax.py > $OUT/tests_kernels.txt 2>&1
echo "kernels: $(grep -c PASSED $OUT/tests_kernels.txt) passed, $(grep -c FAILED $OUT/tests_kernels.txt) failed lines"
grep -E "FAILED|passed|failed|^E  " $OUT/tests_kernels.txt | cut -c1-300 | tail -6
HK_TEST_DEVICE=cuda timeout $(( 230 - ($(date +%s) - start) )) python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider \
  -p no:benchmark --timeout 150 -rf --tb=short tests/dsl/test_gluon_backend.py \
  -k "lowered_attention_matches_float64 or lowered_attention_backward_matches_float64" > $OUT/tests_gluon.txt 2>&1
echo "gluon: $(grep -c PASSED $OUT/tests_gluon.txt) passed, $(grep -c FAILED $OUT/tests_gluon.txt) failed lines"
grep -E "FAILED|passed|failed|^E  " $OUT/tests_gluon.txt | cut -c1-300 | tail -6
echo "total: $(( $(date +%s) - start )) s"
