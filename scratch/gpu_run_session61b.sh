#!/bin/bash
# Sixty-first session, second call (H100): the DSL GPU tests that failed in the first (atomic_cas of
# a scalar value, two tests mixing devices), then the 5- and 6-row bf16 RMSNorm backward probe
# (scratch/session61_h100_rms_bwd_5_6_rows_jobs.json: 5 rows fell to the new 4-row entry's
# two-program config, 0.70x of torch.compile), applied and checked, rows 3-8 measured.
#   bash scratch/gpu_run_session61b.sh   (no carry)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark \
  --timeout 100 -rf --tb=short tests/dsl/test_sync.py tests/dsl/test_integer_division.py tests/dsl/test_torch_functions.py \
  > $OUT/dsl_rerun.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/dsl_rerun.txt | cut -c1-300 | tail -8
echo "dsl: $(( $(date +%s) - start )) s"
if [[ "$gpu" == *H100* ]]; then
  ROWS="3 4 5 6 7 8" bash scratch/gpu_run_probe_apply_verify.sh scratch/session61_h100_rms_bwd_5_6_rows_jobs.json
fi
echo "total: $(( $(date +%s) - start )) s"
