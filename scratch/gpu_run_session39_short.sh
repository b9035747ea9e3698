#!/bin/bash
# Thirty-ninth session, second device call: the config probe of scratch/session39_short_jobs.json,
# then scratch/dq_reduce_probe.py (the one-pass backward's dq traffic, element atomics against TMA reduce).
set -u
start=$(date +%s)
WARM_PROCS=12 bash scratch/gpu_run_probe_parallel_warm.sh scratch/session39_short_jobs.json tuned_configs/sm_90.json both
echo "total: $(( $(date +%s) - start )) s"
timeout 120 python3 scratch/dq_reduce_probe.py 2>&1 | grep -v Warn | tail -8
