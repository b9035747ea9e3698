#!/bin/bash
# The causal forward as one masked key loop (scratch/attention_fwd_masked_loop_probe.py): parallel
# warm-up compiles (and float64 checks) per shape, then the timing in one process.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  timeout -s TERM 300 python3 scratch/attention_fwd_masked_loop_probe.py $OUT warm $i > $OUT/warm_$i.log 2>&1 &
done
wait
echo "warm: $(( $(date +%s) - start )) s"
grep -h "^CHECK" $OUT/warm_*.log | awk "{print \$2, \$3, \$4, \$5}" | sort | uniq -c
grep -h "BAD\|WARM\|Error" $OUT/warm_*.log | head -20
tail -3 $OUT/warm_0.log
timeout -s TERM 240 python3 scratch/attention_fwd_masked_loop_probe.py $OUT 2>&1 | tail -40
