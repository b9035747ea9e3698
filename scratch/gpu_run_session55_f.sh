#!/bin/bash
# Fifty-fifth session's last call, on an H100: the whole-kernel flag steps (config_probe's flag
# steps as extended this session, less the per-loop ones) of the H100 entries at the report's
# missed row shapes, compiled in parallel, then timed in 10 alternating rounds within LIMIT.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
JOBS=scratch/session55_h100_row_misses_whole_kernel_flag_jobs.json; H100=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS $H100 warm
timeout -s TERM $(( ${LIMIT:-240} - ($(date +%s) - start) )) python3 tools/config_probe.py time $JOBS --rounds 10 \
  --table $H100 --out $OUT 2>&1 | grep -v Warning | tail -40
