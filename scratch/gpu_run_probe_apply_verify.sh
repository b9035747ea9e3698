#!/bin/bash
# A config probe of the H100's RMSNorm backward entries, applied and checked in one call: times JOBS
# (tools/config_probe.py, 5 rounds) against the H100 table, applies winners 2% ahead, regenerates,
# runs the RMSNorm backward variant tests at the entries' widths and the small-rows probe at ROWS
# (scratch/rms_norm_bwd_small_rows_probe.py); the table and generated modules come back under
# $OUT/after. The fifty-seventh session ran it with scratch/session57_h100_small_rows_jobs.json
# (64-512 rows), the fifty-eighth with scratch/session58_h100_2_8_rows_jobs.json (2 and 8 rows).
#   ROWS="2 4 8 64" bash scratch/gpu_run_probe_apply_verify.sh JOBS   (no carry)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
mkdir -p $OUT/probe $OUT/after
timeout 170 python3 tools/config_probe.py time $1 --rounds 5 --table $TABLE --out $OUT/probe 2>&1 \
  | grep -v Warning | tail -30
python3 tools/config_probe.py apply $OUT/probe/config_probe.json --table $TABLE --min-gain 0.02 2>&1 | tail -8
timeout 90 python3 -m build_tools generate 2>&1 | tail -2
cp $TABLE $OUT/after/ && cp -r helion_kernels/_generated $OUT/after/
timeout 120 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 100 -rf \
  --tb=short tests/kernels/test_shipped_variants_aligned.py -k "rms_norm_bwd" > $OUT/aligned.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/aligned.txt | cut -c1-300 | tail -8
mkdir -p $OUT/small_rows && OUT=$OUT/small_rows timeout 90 python3 scratch/rms_norm_bwd_small_rows_probe.py ${ROWS:-} 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | cut -c1-120 | tail -8
echo "total: $(( $(date +%s) - start )) s"
