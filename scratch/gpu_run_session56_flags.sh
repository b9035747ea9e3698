#!/bin/bash
# Fifty-sixth session's flag-step calls: a jobs file of config_probe (the session's halves of the
# whole-kernel flag steps of the H100 row entries, scratch/session56_h100_row_flag_jobs_*.json)
# against TABLE (default the H100's), compiled in parallel, timed in 5 rounds, then the variants
# 1.5% ahead confirmed in 10 rounds, all within LIMIT seconds. With PREFILLED (a carried .tgz of
# a Triton cache that scratch/fill_triton_cache.py filled for JOBS), no warm-up compiles.
#   LIMIT=560 [TABLE=tuned_configs/sm_90.json] [PREFILLED=.cache_carry/X.tgz] bash scratch/gpu_run_session56_flags.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
JOBS=$1; TUNED=${TABLE:-tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json}
mkdir -p $OUT/steps $OUT/confirm
python3 scratch/triton_key.py | tee $OUT/triton_key.json
if [ -f "${PREFILLED:-}" ] && grep -q "$(cat ${PREFILLED%.tgz}.key 2>/dev/null || echo none)" $OUT/triton_key.json; then
  # kernels compiled on the CPU machine for this Triton (scratch/fill_triton_cache.py; PREFILLED.key
  # holds the sha256 of the key they were filled under), carried as PREFILLED (a .tgz of
  # /tmp/hk_triton_cache): no warm-up; the entries counted before and after the timing tell
  # whether any kernel compiled here
  export TRITON_CACHE_DIR=/tmp/hk_triton_cache
  tar xzf "$PREFILLED" -C /
  before=$(ls $TRITON_CACHE_DIR | wc -l)
else
  [ -n "${PREFILLED:-}" ] && echo "carried cache not used: this Triton's key is not the one it was filled under"
  WARM_PROCS=16 bash scratch/gpu_run_probe_parallel_warm.sh $JOBS $TUNED warm
  cp /tmp/warm/kept_jobs.json $OUT/steps/kept_jobs.json && JOBS=/tmp/warm/kept_jobs.json
fi
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
echo "timing for at most $(( left * 2 / 3 )) s"
timeout -s TERM $(( left * 2 / 3 )) python3 tools/config_probe.py time $JOBS --rounds 5 --table $TUNED --out $OUT/steps 2>&1 \
  | grep -v Warning | tail -400 > $OUT/steps/log.txt
[ -n "${before:-}" ] && echo "carried cache: $before entries before the timing, $(ls $TRITON_CACHE_DIR | wc -l) after"
python3 scratch/confirm_winners.py $JOBS $OUT/steps/config_probe.json $OUT/confirm/jobs.json 0.015
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
timeout -s TERM $left python3 tools/config_probe.py time $OUT/confirm/jobs.json --rounds 10 --table $TUNED --out $OUT/confirm 2>&1 \
  | grep -v Warning | tail -60
echo "total: $(( $(date +%s) - start )) s"
