#!/bin/bash
# Fifty-fifth session's fifth call, on an H100: the RMSNorm backward under autocast's dtypes (a
# float32 grad_out and weight on bf16 rows) at four shapes: flag and knob steps plus reload_rows
# both ways, compiled in parallel, then timed in 5 rounds.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session55_h100_rms_bwd_autocast_jobs.json \
  tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
