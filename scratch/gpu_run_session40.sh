#!/bin/bash
# Fortieth session's device call: the config probe of ${1:-scratch/session40_jobs.json} (the thirty-ninth
# session's short D64 forward rows, and the long softmax rows, which the H200 ran on the H100's or
# a neighbour's configs). Usage: bash scratch/gpu_run_session40.sh [JOBS]
set -u
start=$(date +%s)
WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh ${1:-scratch/session40_jobs.json} tuned_configs/sm_90.json both
echo "total: $(( $(date +%s) - start )) s"
