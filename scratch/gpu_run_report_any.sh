# The attention and runtime GPU tests, then the report, on whichever card this call got: the H100's
# report goes to benchmarks/RESULTS.md, the H200's to benchmarks/h200/. TESTS (env) names the test
# files run first (the attention kernel and API tests when unset).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout 130 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 120 -rf ${TESTS:-tests/kernels/test_attention.py tests/runtime/test_api_attention.py} 2>&1 | grep -E "passed|failed|^FAILED" | tail -10 | tee $OUT/gpu_tests.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 420 python3 -m benchmarks.report --out $OUT --budget-s 370 $(grep -q H200 $OUT/device.txt && echo --missed ../MISSED.md) 2>&1 | grep -v -i warn | tail -4
