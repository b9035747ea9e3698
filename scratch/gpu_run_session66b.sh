#!/bin/bash
# Sixty-sixth session's second call (H100): the GPU test of the new attention forward variant (B16
# S512 D64 entry), then the config probe of the causal D64 attention forward
# (scratch/session66_h100_attention_fwd_causal_jobs.json). (Between them the call ran the one-pass
# backward's TMA reduce-add probe, since removed as a copy of scratch/attention_bwd_onepass_probe.py's
# `variants` mode.)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 120 python3 -m pytest -v -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark \
  --timeout 100 -rf --tb=short tests/kernels/test_shipped_attention_variants.py -k "88f2db46a226 or every" > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
case "$gpu" in *H100*) table=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json;; *) table=tuned_configs/sm_90.json;; esac
left=$(( ${END:-560} - ($(date +%s) - start) ))
timeout -s TERM -k 10 $left python3 tools/config_probe.py time scratch/session66_h100_attention_fwd_causal_jobs.json \
  --table $table --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -14
echo "total: $(( $(date +%s) - start )) s"
