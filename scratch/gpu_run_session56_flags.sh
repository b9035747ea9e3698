#!/bin/bash
# Fifty-sixth session's flag-step calls: a jobs file of config_probe (the session's halves of the
# whole-kernel flag steps of the H100 row entries, scratch/session56_h100_row_flag_jobs_*.json)
# against TABLE (default the H100's), compiled in parallel, timed in 5 rounds, then the variants
# 1.5% ahead confirmed in 10 rounds, all within LIMIT seconds.
#   LIMIT=560 [TABLE=tuned_configs/sm_90.json] bash scratch/gpu_run_session56_flags.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
JOBS=$1; TUNED=${TABLE:-tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json}
mkdir -p $OUT/steps $OUT/confirm
WARM_PROCS=16 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS $TUNED warm
cp /tmp/warm/kept_jobs.json $OUT/steps/kept_jobs.json && JOBS=/tmp/warm/kept_jobs.json
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
echo "timing for at most $(( left * 2 / 3 )) s"
timeout -s TERM $(( left * 2 / 3 )) python3 tools/config_probe.py time $JOBS --rounds 5 --table $TUNED --out $OUT/steps 2>&1 \
  | grep -v Warning | tail -400 > $OUT/steps/log.txt
python3 scratch/confirm_winners.py $JOBS $OUT/steps/config_probe.json $OUT/confirm/jobs.json 0.015
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
timeout -s TERM $left python3 tools/config_probe.py time $OUT/confirm/jobs.json --rounds 10 --table $TUNED --out $OUT/confirm 2>&1 \
  | grep -v Warning | tail -60
echo "total: $(( $(date +%s) - start )) s"
