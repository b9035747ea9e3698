#!/bin/bash
# The Gluon lowering's offset-moved comparisons against the lowering before (scratch/gluon_offset_compare_probe.py):
# parallel warm-up compiles per H100 table entry, then the timing in one process.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
n=$(python3 -c "import sys; sys.path.insert(0, '.'); from scratch.gluon_offset_compare_probe import entries; print(len(entries()))")
start=$(date +%s)
for i in $(seq 0 $((n - 1))); do
  timeout -s TERM 300 python3 scratch/gluon_offset_compare_probe.py $OUT warm $i > $OUT/warm_$i.log 2>&1 &
done
wait
echo "warm ($n entries): $(( $(date +%s) - start )) s"
grep -h "Error" $OUT/warm_*.log | head
for pass in 1 2; do
  timeout -s TERM 200 python3 scratch/gluon_offset_compare_probe.py $OUT 2>&1 | tail -10
  cp $OUT/offset_compare_probe.json $OUT/offset_compare_probe_$pass.json
done
