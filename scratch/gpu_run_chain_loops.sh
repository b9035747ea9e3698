#!/bin/bash
# chain_loops (H100): the Gluon tests of chained loops against float64, then the config probe of every
# Gluon entry of the H100 table with its loops chained.
# Needs notes/gluon_chain_loops.patch applied (`git apply`): the knob and its tests are not on main.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout -s TERM 200 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 180 -rf \
  tests/dsl/test_gluon_backend.py -k "chained or backward_matches" 2>&1 | tail -8
bash scratch/gpu_run_probe_parallel_warm.sh scratch/chain_loops_h100_jobs.json tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json 2>&1 | tail -90
