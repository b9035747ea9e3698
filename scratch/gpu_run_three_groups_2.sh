#!/bin/bash
# After the three-group D64 entries: their neighbours (scratch/d64_three_groups_jobs_2.json), the
# D64 forward rows of the report beside cuDNN, then the shipped attention variants' GPU tests.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
WARM_PROCS=15 bash scratch/gpu_run_probe_parallel_warm.sh scratch/d64_three_groups_jobs_2.json tuned_configs/sm_90.json both
mkdir -p $OUT/report
timeout 200 python3 -m benchmarks.report --out $OUT/report --budget-s 150 --only attention_fwd:D=64 > $OUT/report.log 2>&1
grep -E "^\| B.*D64.*\| (ours|cudnn) " $OUT/report/RESULTS.md | cut -c1-120
timeout 200 python3 -m pytest -q tests/kernels/test_shipped_variants.py tests/runtime/test_api_attention.py -k "attention" \
  -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 180 > $OUT/tests.log 2>&1
tail -3 $OUT/tests.log
