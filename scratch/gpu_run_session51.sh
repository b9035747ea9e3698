#!/bin/bash
# Fifty-first session's H100 call: the GPU tests of the session's features beside the warm-up
# compiles of a probe's jobs, the probe timed within LIMIT, then the autocast check's host cost.
#   TESTS="..." TABLE=t.json LIMIT=420 bash scratch/gpu_run_session51.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
(timeout 300 python3 -m pytest -q -m "gpu or not gpu" -n 4 -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  $TESTS > $OUT/gpu_tests_full.txt 2>&1
 grep -E "passed|failed|^FAILED|Error" $OUT/gpu_tests_full.txt | tail -25 > $OUT/gpu_tests.txt) &
WARM_PROCS=${WARM_PROCS:-8} bash scratch/gpu_run_probe_parallel_warm.sh "$1" "$TABLE" warm
wait
cat $OUT/gpu_tests.txt
left=$(( ${LIMIT:-420} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time "$1" --rounds ${ROUNDS:-5} --table "$TABLE" --out $OUT 2>&1 \
  | grep -v Warning | tail -40
timeout 90 python3 scratch/autocast_check_probe.py 2>&1 | tail -6
