#!/bin/bash
# Fifty-seventh session's compact H100 call (devices were scarce): the GPU tests of the DSL features
# of the fifty-sixth and fifty-seventh sessions (host reads, `continue`, run-time sizes; torch.stack,
# merged views, device-start slices, hl.jagged_tile, small-int casts), the RMSNorm variants at their
# entries' widths (tests/kernels/test_shipped_variants_aligned.py), the bf16 RMSNorm backward at
# 2-1,024 rows of 4096 (scratch/rms_norm_bwd_small_rows_probe.py) and the 64x4096 launches probe.
#   bash scratch/gpu_run_session57.sh   (carry [".whl"])
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark \
  tests/dsl/test_stack_and_merged_dims.py tests/dsl/test_jagged_tiles.py tests/dsl/test_host_reads.py > $OUT/dsl_tests.txt 2>&1
timeout 100 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark tests/dsl/test_control_flow.py \
  tests/dsl/test_pointwise.py -k "continue or read or sized or count or small_ints" >> $OUT/dsl_tests.txt 2>&1
grep -E "passed|failed|error" $OUT/dsl_tests.txt | tail -4
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 \
  tests/kernels/test_shipped_variants_aligned.py -k rms > $OUT/aligned_tests.txt 2>&1; tail -3 $OUT/aligned_tests.txt
mkdir -p $OUT/small_rows && OUT=$OUT/small_rows timeout 120 python3 scratch/rms_norm_bwd_small_rows_probe.py 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -8
mkdir -p $OUT/launches && OUT=$OUT/launches timeout 120 python3 scratch/rms_norm_launches_probe.py 64x4096 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -40
echo "total: $(( $(date +%s) - start )) s"
