#!/bin/bash
# Sixty-sixth session's fourth call (H100): the GPU test of the fp16 causal D64 S2048 forward's new
# variant, then the short non-causal D64 forward rows' probe: the B16 S512 entry's knobs one notch
# each and the S1024 row (no entry) under the S512 entry's groups at 3-4 stages
# (scratch/session66_h100_attention_fwd_short_jobs_b.json).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
HK_TEST_DEVICE=cuda timeout 120 python3 -m pytest -v -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark \
  --timeout 100 -rf --tb=short tests/kernels/test_shipped_attention_variants.py -k "43eeef998d74" > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
left=$(( ${END:-330} - ($(date +%s) - start) ))
timeout -s TERM -k 10 $left python3 tools/config_probe.py time scratch/session66_h100_attention_fwd_short_jobs_b.json \
  --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -16
echo "total: $(( $(date +%s) - start )) s"
