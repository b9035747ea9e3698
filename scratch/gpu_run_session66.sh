#!/bin/bash
# Sixty-sixth session's first call (H100): the GPU tests of the sixty-fifth session's last DSL work
# (torch.matmul broadcasting, the flattened-loop normalization rules), then the config probe of the
# short D64 attention forward rows (scratch/session65_h100_attention_fwd_short_jobs.json) with what
# is left of the call; the config probe's result comes back in $OUT/probe for `config_probe.py
# apply`. (The call also ran a one-pass attention backward probe, since removed as a copy of
# scratch/attention_bwd_onepass_probe.py; see docs/STATUS.md, sixty-sixth session.)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 170 python3 -m pytest -v -m "gpu or not gpu" -n 14 -p no:cacheprovider -p no:benchmark \
  --timeout 150 -rf --tb=short tests/dsl/test_matmul.py tests/dsl/test_control_flow.py > $OUT/tests.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/tests.txt | cut -c1-250 | tail -10
echo "tests: $(( $(date +%s) - start )) s"
case "$gpu" in *H100*) table=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json;; *) table=tuned_configs/sm_90.json;; esac
left=$(( ${END:-560} - ($(date +%s) - start) ))
timeout -s TERM -k 10 $left python3 tools/config_probe.py time scratch/session65_h100_attention_fwd_short_jobs.json \
  --table $table --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -20
echo "total: $(( $(date +%s) - start )) s"
