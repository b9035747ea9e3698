#!/bin/bash
# Fifty-fifth session's last-budget call, on an H100: the RMSNorm backward's mixed-dtype steps at
# 64x4096 (scratch/session55_h100_rms_bwd_64x4096_jobs.json less its bf16 job), compiled in
# parallel, then timed in 5 rounds within LIMIT seconds of the start.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
python3 -c "import json; j=json.load(open('scratch/session55_h100_rms_bwd_64x4096_jobs.json')); \
json.dump([x for x in j if x.get('dtypes')], open('/tmp/mixed_64.json', 'w'))"
H100=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
WARM_PROCS=16 bash scratch/gpu_run_probe_parallel_warm.sh /tmp/mixed_64.json $H100 warm
timeout -s TERM $(( ${LIMIT:-140} - ($(date +%s) - start) )) python3 tools/config_probe.py time /tmp/mixed_64.json \
  --rounds 5 --table $H100 --out $OUT 2>&1 | grep -v Warning | tail -40
