#!/bin/bash
# Sixty-eighth session's second-card call: the report (into $OUT/report), then the D64 non-causal
# attention backward with dk/dv in Gluon (the H100 took its three-group 192x32 form at S8192,
# 1.036x) probed on this card's table, applied at 2%, fitted, regenerated and GPU-tested on the
# device; changed files come back under $OUT/applied. Carry [".whl"].
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
case "$gpu" in *H100*) table=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json;; *) table=tuned_configs/sm_90.json;; esac
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
mkdir -p $OUT/report
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 330 python3 -m benchmarks.report --out $OUT/report \
  --budget-s ${REPORT_S:-280} $(case "$gpu" in *H200*) echo --missed ../MISSED.md;; esac) 2>&1 | grep -v -i warn | tail -2
echo "report done: $(( $(date +%s) - start )) s"
bash scratch/gpu_probe_apply_test.sh scratch/session66_h100_attention_bwd_d64_gluon_jobs.json $table
echo "total: $(( $(date +%s) - start )) s"
