#!/bin/bash
# Fifty-fifth session's first call, on an H100: the warm-up compiles of the RMSNorm backward's
# float32-weight flag steps at 16384x4096 and of the D64 attention backward's knob steps, in
# parallel (RMSNorm's first); then both probes timed in alternating rounds within LIMIT (RMSNorm first).
#   LIMIT=570 bash scratch/gpu_run_session55_a.sh
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
H100=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
RMS=scratch/session54_h100_rms_bwd_4096_float32_weight_flag_jobs.json
ATT=scratch/session54_h100_attention_bwd_d64_jobs.json
WARM_PROCS=${WARM_PROCS:-14} bash scratch/gpu_run_probe_parallel_warm.sh $RMS $H100 warm
mkdir -p $OUT/rms $OUT/att
python3 - "$ATT" <<'PY'
import json, os, sys
os.makedirs("/tmp/warm_att", exist_ok=True)
for i, job in enumerate(json.load(open(sys.argv[1]))):
    for j, (label, overrides) in enumerate(job["variants"].items()):
        json.dump([{**job, "variants": {label: overrides}}], open(f"/tmp/warm_att/job_{i}_{j}.json", "w"))
PY
ls /tmp/warm_att/job_*.json | xargs -P ${WARM_PROCS:-14} -I{} sh -c 'timeout 300 python3 tools/config_probe.py time {} --rounds 1 --table tuned_configs/sm_90.json --out {}.d > {}.log 2>&1'
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|rejected|differ" /tmp/warm_att/*.log | head -20
timeout -s TERM 150 python3 tools/config_probe.py time $RMS --rounds ${ROUNDS:-5} --table $H100 --out $OUT/rms 2>&1 | grep -v Warning | tail -20
left=$(( ${LIMIT:-570} - ($(date +%s) - start) ))
echo "attention timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time $ATT --rounds ${ROUNDS:-5} --table tuned_configs/sm_90.json --out $OUT/att 2>&1 \
  | grep -v Warning | tail -50
echo "total: $(( $(date +%s) - start )) s"
