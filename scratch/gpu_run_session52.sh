#!/bin/bash
# Fifty-second session's call: the full GPU suite beside the warm-up compiles of a probe's jobs
# (the H200's jobs on an H200, the H100's on an H100), then the command BEFORE (BEFORE_S at most),
# then the probe timed alone within LIMIT.
#   LIMIT=560 BEFORE="python3 scratch/x.py" bash scratch/gpu_run_session52.sh H200_JOBS H100_JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  JOBS=$1; TABLE=tuned_configs/sm_90.json
else
  JOBS=$2; TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
fi
echo "probe $JOBS against $TABLE"
(timeout ${TESTS_S:-330} python3 -m pytest -q -m "gpu or not gpu" -n ${TEST_PROCS:-10} -p no:cacheprovider -p no:benchmark --timeout 280 -rf \
  ${TESTS:-tests/kernels tests/dsl tests/runtime} > $OUT/gpu_tests_full.txt 2>&1
 grep -E "passed|failed|^FAILED|^ERROR|Error" $OUT/gpu_tests_full.txt | tail -40 > $OUT/gpu_tests.txt) &
WARM_PROCS=${WARM_PROCS:-5} bash scratch/gpu_run_probe_parallel_warm.sh "$JOBS" "$TABLE" warm
wait
echo "tests and warm-up: $(( $(date +%s) - start )) s"
cat $OUT/gpu_tests.txt
[ -n "$BEFORE" ] && timeout ${BEFORE_S:-120} $BEFORE 2>&1 | grep -v Warning | tail -20
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time "$JOBS" --rounds ${ROUNDS:-5} --table "$TABLE" --out $OUT 2>&1 \
  | grep -v Warning | tail -40
