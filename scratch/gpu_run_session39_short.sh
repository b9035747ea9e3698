#!/bin/bash
# Thirty-ninth session, second device call: scratch/dq_reduce_probe.py (the one-pass backward's dq
# traffic, element atomics against TMA reduce), then the config probe of scratch/session39_short_jobs.json.
set -u
start=$(date +%s)
timeout 90 python3 scratch/dq_reduce_probe.py 2>&1 | grep -v Warn | tail -8
WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session39_short_jobs.json tuned_configs/sm_90.json both
echo "total: $(( $(date +%s) - start )) s"
