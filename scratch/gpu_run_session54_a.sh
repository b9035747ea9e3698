#!/bin/bash
# Fifty-fourth session's first call, on an H100 or H200: the GPU tests of the RMSNorm variants
# (the backward's fitted ones included) and of the public RMSNorm path, beside the warm-up compiles
# of the float32-weight knob steps at 16384x1024 for this GPU's table; then the RMSNorm mixed-dtype
# probe at every shape (autocast's float32 output and the float32 weight); then the knob steps
# timed within LIMIT.   LIMIT=570 bash scratch/gpu_run_session54_a.sh
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt)
echo "$NAME"
if echo "$NAME" | grep -q H100; then
  TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json; JOBS=scratch/session54_h100_rms_float32_weight_jobs.json
else
  TABLE=tuned_configs/sm_90.json; JOBS=scratch/session53_rms_float32_weight_jobs.json
fi
(timeout ${TESTS_S:-150} python3 -m pytest -v -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 120 \
  tests/kernels/test_shipped_variants.py tests/runtime/test_api_rms_norm.py -k "rms" > $OUT/gpu_tests_verbose.txt 2>&1) &
WARM_PROCS=${WARM_PROCS:-6} bash scratch/gpu_run_probe_parallel_warm.sh $JOBS $TABLE warm
wait
echo "tests and warm-up: $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -20
timeout ${PROBE_S:-170} python3 scratch/rms_norm_mixed_dtype_probe.py 2>&1 | grep -v -i "warn\|inductor\|important use" | tail -20
echo "probe done: $(( $(date +%s) - start )) s"
left=$(( ${LIMIT:-570} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time $JOBS --rounds ${ROUNDS:-5} --table $TABLE --out $OUT 2>&1 \
  | grep -v Warning | tail -60
echo "total: $(( $(date +%s) - start )) s"
