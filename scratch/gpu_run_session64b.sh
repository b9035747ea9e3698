#!/bin/bash
# Sixty-fourth session, second H100 call: config probes of the RMSNorm backward's balanced
# contiguous row runs (scratch/session64_h100_rms_bwd_balanced_jobs.json) and one-notch steps of the
# float32 4096x131072 softmax forward entry (scratch/session64_h100_softmax_fp32_long_jobs.json).
# JOBS picks the jobs files, END the seconds by which they must end, TABLE the table (an H200: sm_90.json).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
table=${TABLE:-tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json}
for jobs in ${JOBS:-rms_bwd_balanced softmax_fp32_long}; do
  timeout $(( ${END:-570} - ($(date +%s) - start) )) python3 tools/config_probe.py time scratch/session64_h100_${jobs}_jobs.json \
    --table $table --out $OUT/$jobs 2>&1 | grep -v -i warn | cut -c1-220 | tail -40
  echo "$jobs: $(( $(date +%s) - start )) s"
done
