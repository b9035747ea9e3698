#!/bin/bash
# The row_sum_dot GPU tests (Gluon and Triton forwards, the DSL's products with constant tiles),
# then a config probe of row_sum_dot at the H200's forward entries and of the dq tile reversal at
# the causal backward entries (scratch/row_sum_dot_jobs.json).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 170 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 160 -rf \
  tests/dsl/test_gluon_backend.py::test_row_sum_dot_lowered_matches_float64 tests/kernels/test_attention.py \
  "tests/dsl/test_matmul.py::test_product_with_a_constant_tile" -k "row_sum or forward or lazy or no_keys or constant" 2>&1 \
  | grep -E "passed|failed|^FAILED|Error" | tail -15 | tee $OUT/gpu_tests.txt
WARM_PROCS=15 bash scratch/gpu_run_probe_parallel_warm.sh scratch/row_sum_dot_jobs.json tuned_configs/sm_90.json both
