#!/bin/bash
# Sixty-second session, third call: float torch.maximum / minimum (clamp, relu) now propagate NaN as
# PyTorch's (Triton's default takes the other operand on the GPU), which changed the online row
# maxima of the shipped softmax and attention forward kernels. The DSL GPU tests of the new functions,
# the attention and softmax kernel tests on the regenerated modules, then old against new module in
# one process: softmax's split-row entries (scratch/softmax_prefetch_ab.py) and attention forward
# shapes (scratch/attention_fwd_source_ab.py, AB_SHAPES), outputs compared. The old modules:
#   git show 717cf54:helion_kernels/_generated/softmax.py > scratch/old_softmax_gen.py
#   git show 717cf54:helion_kernels/_generated/attention.py > scratch/old_attention_gen.py
#   cp tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json scratch/old_h100.json
#   bash scratch/gpu_run_session62c.sh   (carry [".whl"]: the last step, scratch/store_cache_modifier_probe.py, times Liger)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 150 python3 -m pytest -q -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 140 -rf --tb=short tests/dsl/test_elementary.py tests/dsl/test_ordering.py tests/kernels/test_attention.py \
  tests/kernels/test_shipped_variants.py -k "elementary or ordering or attention or softmax" > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -12
echo "tests: $(( $(date +%s) - start )) s"
timeout 60 python3 scratch/softmax_prefetch_ab.py 2>&1 | grep -v -i warn | cut -c1-200 | tail -8
echo "softmax a/b: $(( $(date +%s) - start )) s"
AB_SHAPES=${AB_SHAPES:-0,3} timeout $(( 270 - ($(date +%s) - start) )) python3 scratch/attention_fwd_source_ab.py \
  scratch/old_attention_gen.py $OUT 2>&1 | grep -v -i warn | cut -c1-220 | tail -8
echo "total: $(( $(date +%s) - start )) s"
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null \
  && PYTHONPATH=/tmp/site:$PWD timeout $(( 370 - ($(date +%s) - start) )) python3 scratch/store_cache_modifier_probe.py $OUT 2>&1 \
  | grep -v -i warn | cut -c1-250 | tail -5
echo "with the store probe: $(( $(date +%s) - start )) s"
