#!/bin/bash
# Fiftieth session's H100 call: GPU tests (TESTS, TESTS_K) beside the warm-up compiles of the
# confirm jobs, then their timing over ROUNDS alternating rounds against TABLE (the table before
# the candidates were applied), then the native replay's plan-scan probe.
#   TESTS="..." TESTS_K="..." TABLE=t.json ROUNDS=10 bash scratch/gpu_run_session50.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  $TESTS ${TESTS_K:+-k "$TESTS_K"} > $OUT/gpu_tests_full.txt 2>&1
 grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
WARM_PROCS=4 bash scratch/gpu_run_probe_parallel_warm.sh "$1" "$TABLE" warm
wait
cat $OUT/gpu_tests.txt
timeout -s TERM 300 python3 tools/config_probe.py time "$1" --rounds ${ROUNDS:-10} --table "$TABLE" --out $OUT 2>&1 \
  | grep -v Warning | tail -20
timeout 60 python3 scratch/replay_scan_probe.py 2>&1 | tail -9
