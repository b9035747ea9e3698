#!/bin/bash
# Thirty-ninth session, second device call: the config probe of scratch/session39_short_jobs.json.
set -u
start=$(date +%s)
WARM_PROCS=12 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session39_short_jobs.json tuned_configs/sm_90.json both
echo "total: $(( $(date +%s) - start )) s"
