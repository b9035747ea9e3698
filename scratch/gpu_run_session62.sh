#!/bin/bash
# Sixty-second session, first call: the shipped softmax variants' GPU tests on the module that the
# sixty-first session regenerated (split-rows tickets floored), then its split-row entries timed
# against the module before that change (scratch/softmax_prefetch_ab.py with
#   git show 77e3b91^:helion_kernels/_generated/softmax.py > scratch/old_softmax_gen.py
#   cp tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json scratch/old_h100.json).
#   bash scratch/gpu_run_session62.sh   (no carry)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 240 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark \
  --timeout 200 -rf --tb=short tests/kernels/test_shipped_variants.py tests/kernels/test_shipped_variants_aligned.py -k softmax \
  > $OUT/softmax_variants.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/softmax_variants.txt | cut -c1-300 | tail -8
echo "tests: $(( $(date +%s) - start )) s"
timeout 200 python3 scratch/softmax_prefetch_ab.py 2>&1 | grep -v -i warn | tail -20
echo "total: $(( $(date +%s) - start )) s"
