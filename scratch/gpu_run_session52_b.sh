#!/bin/bash
# Fifty-second session's second call. On an H200: the GPU tests of the session's change (verbose,
# beside the warm-up compiles of the H200's probe jobs), the softmax float32-output probe, then the
# probe timed within LIMIT. On an H100: the full GPU suite alone, verbose (its last run was cut at
# 77% by its time limit, no failure).
#   LIMIT=570 bash scratch/gpu_run_session52_b.sh H200_JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt)
echo "$NAME"

CHANGED="tests/runtime/test_api_softmax.py tests/runtime/test_compile_opcheck.py tests/runtime/test_dispatch.py
 tests/runtime/test_torch_semantics.py tests/kernels/test_shipped_variants.py tests/kernels/test_static_variants.py"
if ! echo "$NAME" | grep -q H200; then
  timeout ${SUITE_S:-540} python3 -m pytest -v -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 280 \
    $CHANGED tests/kernels tests/dsl tests/runtime > $OUT/gpu_suite_verbose.txt 2>&1
  grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_suite_verbose.txt | tail -30
  grep -c " PASSED" $OUT/gpu_suite_verbose.txt
  exit 0
fi
(timeout ${TESTS_S:-200} python3 -m pytest -v -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 180 \
  $CHANGED > $OUT/gpu_tests_verbose.txt 2>&1) &
WARM_PROCS=${WARM_PROCS:-6} bash scratch/gpu_run_probe_parallel_warm.sh "$1" tuned_configs/sm_90.json warm
wait
echo "tests and warm-up: $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -30
timeout 110 python3 scratch/softmax_float32_output_probe.py 2>&1 | grep -v -i "warn\|inductor\|online softmax\|important use" | tail -12
left=$(( ${LIMIT:-570} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time "$1" --rounds ${ROUNDS:-5} --table tuned_configs/sm_90.json --out $OUT 2>&1 \
  | grep -v Warning | tail -60
