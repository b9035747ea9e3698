#!/bin/bash
# Sixty-seventh session's call (H100, or the H200 against its own table): the sixty-sixth's last call
# (scratch/gpu_run_session66e.sh: GPU tests of diagonals of one tile's dim taken twice, then the D64
# non-causal attention backward with dk/dv in Gluon too), then on the device itself what a second
# call would do: apply winners at 2%, fit, regenerate, and GPU-test the new variants. The changed
# table and attention module come back under $OUT/applied.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
case "$gpu" in *H100*) table=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json;; *) table=tuned_configs/sm_90.json;; esac
HK_TEST_DEVICE=cuda timeout 90 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark \
  --timeout 80 -rf --tb=short tests/dsl/test_slicing.py tests/dsl/test_einsum.py -k "tile_taken_twice" 2>&1 | tail -4
cp $table /tmp/before.json
timeout -s TERM -k 10 240 python3 tools/config_probe.py time scratch/session66_h100_attention_bwd_d64_gluon_jobs.json \
  --table $table --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -14
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
echo "total: $(( $(date +%s) - start )) s"
