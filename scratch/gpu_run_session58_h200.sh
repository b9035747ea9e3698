#!/bin/bash
# Fifty-eighth session on an H200 (no H100 could be started): the correctness half of
# scratch/gpu_run_session58_a.sh (the aligned RMSNorm backward variant tests at 4096 columns with the
# 64x4096 entry's float32-weight variants under its base config, and their per-output errors; sm_90
# code, the same on both GPUs), then the H200's queued whole-kernel flag steps of JOBS against
# sm_90.json from the carried cache, within LIMIT seconds in all.
#   LIMIT=560 bash scratch/gpu_run_session58_h200.sh JOBS   (carry [".cache_carry"])
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout 150 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 120 \
  -rf --tb=short tests/kernels/test_shipped_variants_aligned.py -k "rms_norm_bwd and 4096" > $OUT/aligned.txt 2>&1
grep -E "FAILED|passed|failed|Error" $OUT/aligned.txt | cut -c1-300 | tail -12
timeout 60 python3 scratch/rms_bwd_variant_diag.py 4096 2,37 a14fc754da12:weight=float32 \
  3b40ed44f405:grad_out=float32,weight=float32 2>&1 | grep -v Warn | tee $OUT/diag.txt | cut -c1-240 | tail -30
LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - start) )) TABLE=tuned_configs/sm_90.json \
  PREFILLED=.cache_carry/h200_flags.tgz bash scratch/gpu_run_session56_flags.sh $1
echo "total: $(( $(date +%s) - start )) s"
