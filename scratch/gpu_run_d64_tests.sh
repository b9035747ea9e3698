#!/bin/bash
# The persistent Gluon forward tests (D64 and D128) and the public attention API's GPU tests.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 280 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  "tests/dsl/test_gluon_backend.py::test_persistent_lowered_attention_matches_float64" tests/runtime/test_api_attention.py \
  > $OUT/gpu_tests.log 2>&1
tail -5 $OUT/gpu_tests.log
