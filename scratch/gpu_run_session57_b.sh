#!/bin/bash
# Fifty-seventh session's H100 follow-up: the bf16 RMSNorm backward at 8-512 rows of 4096 ran
# 0.69-0.87x of torch.compile (and slower than eager at 256-512 rows) under the small-row entries'
# unpipelined configs, while the 16384x4096 entry's config ran 1,024 rows at 1.31x. Times that config
# and four neighbours at 64 rows (the entry) and 8 / 256 / 512 rows (new entries), applies winners 2%
# ahead, regenerates, runs the RMSNorm variant tests at the entries' widths and the small-rows probe
# again; the table and generated module come back under $OUT. Also the int4 DSL test (tolerance).
#   bash scratch/gpu_run_session57_b.sh   (carry [".whl"])
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
timeout 40 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark \
  tests/dsl/test_stack_and_merged_dims.py -k int4 2>&1 | tail -1
mkdir -p $OUT/probe $OUT/after
timeout 170 python3 tools/config_probe.py time scratch/session57_h100_small_rows_jobs.json --rounds 5 --table $TABLE \
  --out $OUT/probe 2>&1 | grep -v Warning | tail -30
python3 tools/config_probe.py apply $OUT/probe/config_probe.json --table $TABLE --min-gain 0.02 2>&1 | tail -8
timeout 90 python3 -m build_tools generate 2>&1 | tail -2
cp $TABLE $OUT/after/ && cp -r helion_kernels/_generated $OUT/after/
timeout 80 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 70 \
  tests/kernels/test_shipped_variants_aligned.py -k "rms_norm_bwd" 2>&1 | tail -2
mkdir -p $OUT/small_rows && OUT=$OUT/small_rows timeout 80 python3 scratch/rms_norm_bwd_small_rows_probe.py 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | cut -c1-120 | tail -8
echo "total: $(( $(date +%s) - start )) s"
