#!/bin/bash
# Forty-ninth session's report run: the GPU tests of every shipped row-op and matmul variant (the
# table's new entries among them), then the H200 report (benchmarks.report) of the commit checked
# out, with Liger-Kernel from .whl (carry [".whl"]).
#   bash scratch/gpu_run_session49.sh
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 170 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 160 -rf \
  tests/kernels/test_shipped_variants.py tests/kernels/test_shipped_matmul_variants.py > $OUT/gpu_tests_full.txt 2>&1
grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 400 python3 -m benchmarks.report --out $OUT --budget-s ${REPORT_S:-350} --missed ../MISSED.md 2>&1 | grep -v -i warn | tail -4
