#!/bin/bash
# relative_masks (H100): the config probe of every causal Gluon entry of the H100 table with the knob,
# then the Gluon GPU tests (the knob's cases among them) against float64.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash scratch/gpu_run_probe_parallel_warm.sh scratch/relative_masks_h100_jobs.json tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json 2>&1 | tail -60
timeout -s TERM 240 python3 -m pytest -q -m gpu -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  tests/dsl/test_gluon_backend.py 2>&1 | tail -8
