#!/bin/bash
# Sixty-fifth session's first call (the sixty-fourth's report call, taken back mid-run): the GPU
# tests of the DSL's parts of device values, diagonals, cat by lanes, einsum (ellipses, diagonals),
# dropout, loads of unit dims and the elementary functions (float64 erfinv), then the full report
# with what is left of the call (Liger from .whl: carry [".whl"]), for benchmarks/RESULTS.md (H100)
# or benchmarks/h200/RESULTS.md.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 100 python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 90 -rf --tb=short tests/dsl/test_slicing.py tests/dsl/test_stack_and_merged_dims.py tests/dsl/test_einsum.py \
  tests/dsl/test_dropout.py tests/dsl/test_indexing.py tests/dsl/test_elementary.py > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -10
echo "tests: $(( $(date +%s) - start )) s"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
left=$(( ${END:-585} - ($(date +%s) - start) ))
mkdir -p $OUT/report
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 10 $left python3 -m benchmarks.report --out $OUT/report --budget-s $(( left - 25 )) \
  2>&1 | grep -v -i warn | tail -3
grep -E "^\| .*(met|missed)" $OUT/report/RESULTS.md | cut -c1-220 | head -12
grep -c "not run" $OUT/report/RESULTS.md
echo "total: $(( $(date +%s) - start )) s"
