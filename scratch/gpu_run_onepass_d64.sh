#!/bin/bash
# The one-pass backward probe at D64 (H100): the candidates compile in parallel first.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
seq 0 7 | xargs -P 8 -I{} timeout 240 python3 scratch/attention_bwd_onepass_probe.py $OUT warm {} 2>&1 | grep -v Warn | tail -20
echo "warm-up compiles: $(( $(date +%s) - start )) s"
timeout -s TERM 360 python3 scratch/attention_bwd_onepass_probe.py $OUT d64 2>&1 | grep -v Warn | tail -70
