#!/bin/bash
# On the device: time a jobs file's variants against TABLE (tools/config_probe.py), apply winners at
# 2%, then fit, regenerate and GPU-test the variants that are new; the changed table and attention
# module come back under $OUT/applied. Usage: bash scratch/gpu_probe_apply_test.sh JOBS TABLE
jobs=$1 table=$2
cp $table /tmp/before.json
timeout -s TERM -k 10 240 python3 tools/config_probe.py time $jobs --table $table --rounds 5 --out $OUT/probe 2>&1 \
  | grep -v -i warn | tail -14
python3 tools/config_probe.py apply $OUT/probe/config_probe.json --table $table --min-gain 0.02 2>&1 | tail -6
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
