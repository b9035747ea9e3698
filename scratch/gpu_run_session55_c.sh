#!/bin/bash
# Fifty-fifth session's fourth call, on an H100: the RMSNorm backward's float32-weight reload_rows
# step at 65536x4096 confirmed in 10 rounds, then the GPU tests of the RMSNorm variants and public
# path and the RMSNorm mixed-dtype probe (scratch/gpu_run_session55_e.sh).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 150 python3 tools/config_probe.py time scratch/session55_h100_rms_bwd_65536_confirm_jobs.json --rounds 10 \
  --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail
bash scratch/gpu_run_session55_e.sh
