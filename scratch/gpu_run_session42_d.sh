#!/bin/bash
# Forty-second session, fourth call: the causal D128 backward's masks under branches on the drawn
# persistent grids (scratch/session42_bwd_branch_jobs.json), and per-kernel times beside cuDNN's
# (scratch/bwd_kernel_split_h200.py).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
JOBS=scratch/session42_bwd_branch_jobs.json
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
WARM_PROCS=11 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json warm
timeout 150 python3 scratch/bwd_kernel_split_h200.py 2>&1 | grep -v -i warn | tee $OUT/kernel_split.txt
bash scratch/gpu_run_probe_parallel_warm.sh $JOBS tuned_configs/sm_90.json time
