#!/bin/bash
# Fortieth session's device calls: a config probe of JOBS (default scratch/session40_jobs.json: the
# thirty-ninth session's short D64 forward rows, the long softmax rows and the decode matmuls;
# scratch/session40_bwd_jobs.json: the backward at the report's shapes that run a neighbour's entry).
# Usage: bash scratch/gpu_run_session40.sh [JOBS]
set -u
start=$(date +%s)
WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh "${1:-scratch/session40_jobs.json}" tuned_configs/sm_90.json both
echo "total: $(( $(date +%s) - start )) s"
