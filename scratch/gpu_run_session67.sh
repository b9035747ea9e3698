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
bash scratch/gpu_probe_apply_test.sh scratch/session66_h100_attention_bwd_d64_gluon_jobs.json $table
echo "total: $(( $(date +%s) - start )) s"
