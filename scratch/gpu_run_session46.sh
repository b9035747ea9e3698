#!/bin/bash
# Forty-sixth session's device runs: GPU tests (pytest args in TESTS, empty for none) beside the
# warm-up compiles of a probe, then the probe, its timing cut to fit a 600 s call.
#   TESTS="tests/..." TESTS_K="pytest -k expression" TABLE=table.json bash scratch/gpu_run_session46.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=$1
TABLE=${TABLE:-tuned_configs/sm_90.json}
start=$(date +%s)
if [ -n "${TESTS:-}" ]; then
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  $TESTS ${TESTS_K:+-k "$TESTS_K"} > $OUT/gpu_tests_full.txt 2>&1
 grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -15 > $OUT/gpu_tests.txt) &
fi
WARM_PROCS=${WARM_PROCS:-11} bash scratch/gpu_run_probe_parallel_warm.sh $JOBS $TABLE warm
wait
[ -n "${TESTS:-}" ] && cat $OUT/gpu_tests.txt
left=$(( ${LIMIT:-570} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time "$JOBS" --rounds 5 --table $TABLE --out $OUT 2>&1 | grep -v Warning | tail -150
