#!/bin/bash
# After the D64 forward entries changed: the attention GPU tests (kernels, public API, Gluon
# lowering), then the report's D64 forward rows with their peers in one process.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 180 -rf \
  tests/kernels/test_attention.py tests/runtime/test_api_attention.py tests/dsl/test_gluon_backend.py tests/dsl/test_matmul.py 2>&1 \
  | grep -E "passed|failed|^FAILED" | tail -12 | tee $OUT/gpu_tests.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m benchmarks.report --out $OUT --budget-s 250 --only attention_fwd:D=64 2>&1 | grep -v -i warn | tail -12
