#!/bin/bash
# Nsight Compute on the causal D128 S1024 forward, shipped and "one loop" (scratch/attention_fwd_ncu_probe.py).
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
which ncu || ls /opt/nvidia/nsight-compute/*/ncu
NCU=$(which ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
timeout -s TERM 400 $NCU --profile-from-start off --set full --import-source yes --clock-control none \
  -o $OUT/fwd python3 scratch/attention_fwd_ncu_probe.py 2>&1 | tail -15
$NCU -i $OUT/fwd.ncu-rep --page details --csv > $OUT/details.csv 2>&1; wc -l $OUT/details.csv
$NCU -i $OUT/fwd.ncu-rep --page source --csv --print-source sass > $OUT/source_sass.csv 2>&1; wc -l $OUT/source_sass.csv; head -c 600 $OUT/source_sass.csv
$NCU -i $OUT/fwd.ncu-rep --page source --csv --print-source cuda > $OUT/source_py.csv 2>&1; wc -l $OUT/source_py.csv; head -c 400 $OUT/source_py.csv
ls -la $OUT
