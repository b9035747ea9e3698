#!/bin/bash
# The Gluon GPU tests (with the register-capped cases), then the D64 maxnreg config probe (H100).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout -s TERM 250 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark --timeout 240 -rf \
  tests/dsl/test_gluon_backend.py -k "not compiles_for_sm90 and not shares_registers" 2>&1 | tail -8
timeout -s TERM 300 python3 tools/config_probe.py time scratch/gluon_d64_maxnreg_jobs.json --rounds 5 \
  --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail -60
