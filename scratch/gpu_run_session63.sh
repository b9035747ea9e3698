#!/bin/bash
# Sixty-third session: the GPU tests of this session's DSL changes (NaN-propagating float max/min
# reductions and argmax/argmin, cummax/cummin, torch.cat, torch.gather, erfinv, bf16 negation by its
# sign bit; test_elementary's int conversions), the lowered (Gluon) attention tests, the shipped
# attention and softmax kernels, then the shipped softmax forward old (717cf54) against new as
# dispatched (scratch/softmax_dispatch_ab.py; first `git show 717cf54:helion_kernels/_generated/
# softmax.py > scratch/old_softmax_gen.py`).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 250 python3 -m pytest -q -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 240 -rf --tb=short tests/dsl/test_elementary.py tests/dsl/test_reductions.py tests/dsl/test_ordering.py \
  tests/dsl/test_stack_and_merged_dims.py tests/dsl/test_torch_functions.py tests/dsl/test_gluon_backend.py \
  tests/kernels/test_attention.py tests/kernels/test_softmax.py > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -14
echo "tests: $(( $(date +%s) - start )) s"
timeout $(( 380 - ($(date +%s) - start) )) python3 scratch/softmax_dispatch_ab.py $OUT 2>&1 | grep -v -i warn | cut -c1-200 | tail -14
echo "total: $(( $(date +%s) - start )) s"
