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
cp $table /tmp/before.json
timeout -s TERM -k 10 200 python3 tools/config_probe.py time scratch/session66_h100_attention_bwd_d64_gluon_jobs.json \
  --table $table --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -14
python3 tools/config_probe.py apply $OUT/probe/config_probe.json --table $table --min-gain 0.02 2>&1 | tail -4
new=$(python3 - "$table" <<'PY'
import json, sys
before = {e["variant"] for e in json.load(open("/tmp/before.json"))["entries"]}
print(" or ".join(e["variant"] for e in json.load(open(sys.argv[1]))["entries"] if e["variant"] not in before))
PY
)
if [ -n "$new" ]; then
  echo "new variants: $new"
  TRITON_INTERPRET=0 timeout 120 python3 tools/fit_dtype_variants.py --tables $table 2>&1 | tail -3
  TRITON_INTERPRET=0 timeout 120 python3 -m build_tools generate 2>&1 | tail -2
  HK_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark -rf --tb=short \
    tests/kernels/test_shipped_attention_variants.py -k "$new" 2>&1 | tail -4
  mkdir -p $OUT/applied && cp $table helion_kernels/_generated/attention.py $OUT/applied/
else
  echo "nothing applied"
fi
echo "total: $(( $(date +%s) - start )) s"
