#!/bin/bash
# Sixty-sixth session's fifth call (H100, or the H200 against its own table): the D64 non-causal attention backward with its dk/dv
# kernel in Gluon too (scratch/session66_h100_attention_bwd_d64_gluon_jobs.json: S4096's entry and
# S8192, which runs it; both Gluon at two or three consumer groups against the entry's Gluon dq and
# Triton dk/dv); first the GPU tests of diagonals of one tile's dim taken twice.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
case "$gpu" in *H100*) table=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json;; *) table=tuned_configs/sm_90.json;; esac
HK_TEST_DEVICE=cuda timeout 90 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark \
  --timeout 80 -rf --tb=short tests/dsl/test_slicing.py tests/dsl/test_einsum.py -k "tile_taken_twice" 2>&1 | tail -4
timeout -s TERM -k 10 ${END:-240} python3 tools/config_probe.py time scratch/session66_h100_attention_bwd_d64_gluon_jobs.json \
  --table $table --rounds 5 --out $OUT/probe 2>&1 | grep -v -i warn | tail -14
echo "total: $(( $(date +%s) - start )) s"
