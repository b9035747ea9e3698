#!/bin/bash
# Sixty-sixth session's third call (H100): the GPU test of the causal D64 S2048 forward's new
# variant, the fp16 entry of that shape under the bf16 entry's new config
# (scratch/session66_h100_attention_fwd_fp16_jobs.json), then the report's D64 attention forward
# rows against cuDNN (`--only attention_fwd:D=64`) with what is left of the call.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 120 python3 -m pytest -v -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark \
  --timeout 100 -rf --tb=short tests/kernels/test_shipped_attention_variants.py -k "42b13cb2066b" > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
timeout 120 python3 tools/config_probe.py time scratch/session66_h100_attention_fwd_fp16_jobs.json \
  --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -4
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
left=$(( ${END:-400} - ($(date +%s) - start) ))
mkdir -p $OUT/report
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 10 $left python3 -m benchmarks.report --out $OUT/report --budget-s $(( left - 25 )) \
  --only attention_fwd:D=64 2>&1 | grep -v -i warn | tail -3
grep -E "^\| .*attention|cuDNN" $OUT/report/RESULTS.md | cut -c1-260 | head -14
echo "total: $(( $(date +%s) - start )) s"
