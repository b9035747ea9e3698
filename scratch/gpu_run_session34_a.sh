#!/bin/bash
# Thirty-fourth session, first run (H200): the config probe of the H200 table's attention forward
# entries in bf16 (scratch/h200_attention_fwd_jobs.py).
set -u
start=$(date +%s)
bash scratch/gpu_run_probe_parallel_warm.sh scratch/h200_attention_fwd_bf16_jobs.json tuned_configs/sm_90.json 2>&1 | tail -70
echo "total: $(( $(date +%s) - start )) s"
