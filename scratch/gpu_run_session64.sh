#!/bin/bash
# Sixty-fourth session, H100: the GPU tests of the sixty-third session's gather fix, logcumsumexp
# and take_along_dim (first call; TESTS overrides the -k filter: the second call ran "cat or backward or
# rms_norm_bwd"), the RMSNorm backward tests and every shipped RMSNorm backward variant after the
# balanced contiguous row runs, then old (116b87f) against new module as dispatched
# (scratch/dispatch_ab.py; first `git show 116b87f:helion_kernels/_generated/rms_norm.py >
# scratch/old_rms_norm_gen.py`).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 300 python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 280 -rf --tb=short tests/dsl/test_ordering.py tests/dsl/test_reductions.py \
  tests/dsl/test_stack_and_merged_dims.py tests/kernels/test_rms_norm.py tests/kernels/test_shipped_variants.py \
  tests/kernels/test_shipped_variants_aligned.py \
  -k "${TESTS:-gather or take_along or log_sums or backward or rms_norm_bwd}" > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -14
echo "tests: $(( $(date +%s) - start )) s"
shapes="bfloat16:16384x1024 bfloat16:16384x2048 bfloat16:16384x4096 bfloat16:16384x8192 bfloat16:16384x16384
 bfloat16:2048x16384 bfloat16:65536x4096 bfloat16:4096x768 bfloat16:64x262144 bfloat16:1x4096 bfloat16:4097x4096
 float32:16384x4096 float32:4096x768"
timeout $(( ${AB_END:-560} - ($(date +%s) - start) )) python3 scratch/dispatch_ab.py rms_norm_bwd scratch/old_rms_norm_gen.py $OUT $shapes 2>&1 \
  | grep -v -i warn | cut -c1-200 | tail -16
echo "total: $(( $(date +%s) - start )) s"
