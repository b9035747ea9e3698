#!/bin/bash
# After the three-group entries (forward and backward): the fp16 causal S8192 forward's probe, the
# GPU tests of the lowering and of the shipped attention variants, then the D64 report rows.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
WARM_PROCS=15 bash scratch/gpu_run_probe_parallel_warm.sh scratch/d64_causal_s8192_fp16_jobs.json tuned_configs/sm_90.json both | tail -4
timeout 150 python3 -m pytest -q tests/dsl/test_gluon_backend.py -k "three_group or (matches_float64 and 64-3)" \
  -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 140 > $OUT/tests.log 2>&1
tail -3 $OUT/tests.log
timeout 200 python3 -m pytest -q tests/kernels/test_shipped_variants.py tests/runtime/test_api_attention.py \
  tests/kernels/test_attention.py -k "attention" -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark \
  --timeout 180 > $OUT/tests2.log 2>&1
tail -3 $OUT/tests2.log
mkdir -p $OUT/report
timeout 190 python3 -m benchmarks.report --out $OUT/report --budget-s 150 --only attention_fwd:D=64 --only attention_bwd:D=64 > $OUT/report.log 2>&1
grep -E "^\| B.*D64.*\| (ours|cudnn) " $OUT/report/RESULTS.md | cut -c1-100
