#!/bin/bash
# Sixty-eighth session's last H100 call: the D64 non-causal attention backward with dk/dv in Gluon
# (three groups over 192x32 tiles, the S8192 entry's form) at S2048 and S4096 (at 2-4
# stages), probed, applied at 2%, fitted, regenerated and GPU-tested on the device. The
# 192x64 dk/dv tiles were left out: ptxas spills 1,496 bytes a thread there (sm_90 cross-compile).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
bash scratch/gpu_probe_apply_test.sh scratch/session68_h100_attention_bwd_d64_jobs.json tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
echo "total: $(( $(date +%s) - start )) s"
