#!/bin/bash
# Fifty-eighth session, H100, after the new 2x4096 bf16 RMSNorm backward entry (2-row blocks: one
# program and no sum pass at 2 rows) and the 64x4096 entry's float32-weight variants under its base
# config: the RMSNorm backward variant tests at the entries' widths, the small-rows probe at 2-64
# rows, the mixed-dtype 64x4096 probe and its launches.
#   bash scratch/gpu_run_session58_c.sh   (no carry)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 80 -rf \
  --tb=short tests/kernels/test_shipped_variants_aligned.py -k "rms_norm_bwd" > $OUT/aligned.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/aligned.txt | cut -c1-300 | tail -8
mkdir -p $OUT/small_rows && OUT=$OUT/small_rows timeout 80 python3 scratch/rms_norm_bwd_small_rows_probe.py 2 3 4 8 64 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | cut -c1-120 | tail -8
mkdir -p $OUT/mixed && OUT=$OUT/mixed timeout 70 python3 scratch/rms_norm_mixed_dtype_probe.py 64x4096 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | cut -c1-160 | tail -12
echo "total: $(( $(date +%s) - start )) s"
