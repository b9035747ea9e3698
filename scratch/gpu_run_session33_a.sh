#!/bin/bash
# Thirty-third session, first run (H100): the Gluon backward tests (relative_masks on the column
# side among them), the backward config probe with the knob per kernel, and the causal forward as one
# masked key loop (its warm-up compiles run beside the tests).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
mkdir -p $OUT/masked
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  timeout -s TERM 300 python3 scratch/attention_fwd_masked_loop_probe.py $OUT/masked warm $i > $OUT/masked/warm_$i.log 2>&1 &
done
timeout -s TERM 200 python3 -m pytest -q -m gpu -n 9 -p no:cacheprovider -p no:benchmark --timeout 180 -rf \
  tests/dsl/test_gluon_backend.py -k backward_matches 2>&1 | tail -6
echo "tests: $(( $(date +%s) - start )) s"
wait
echo "masked warm: $(( $(date +%s) - start )) s"
grep -h "^CHECK" $OUT/masked/warm_*.log | awk "{print \$2, \$3, \$4, \$5}" | sort | uniq -c
grep -h "BAD\|WARM\|Error" $OUT/masked/warm_*.log | head -20
mkdir -p $OUT/bwd
OUT=$OUT/bwd bash scratch/gpu_run_probe_parallel_warm.sh scratch/relative_masks_bwd_h100_jobs.json tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json 2>&1 | tail -40
echo "bwd probe: $(( $(date +%s) - start )) s"
timeout -s TERM 200 python3 scratch/attention_fwd_masked_loop_probe.py $OUT/masked 2>&1 | tail -40
echo "total: $(( $(date +%s) - start )) s"
