#!/bin/bash
# Three consumer warpgroups (192-row tiles) at D64: the Gluon GPU tests of that form, then the
# config probe of scratch/d64_three_groups_jobs.json against the H200 table.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 240 python3 -m pytest -q tests/dsl/test_gluon_backend.py -m "gpu or not gpu" -k "matches_float64 and 64-3" \
  -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 > $OUT/tests.log 2>&1
tail -3 $OUT/tests.log
WARM_PROCS=15 bash scratch/gpu_run_probe_parallel_warm.sh scratch/d64_three_groups_jobs.json tuned_configs/sm_90.json both
