#!/bin/bash
# Nsight Compute on the D64 forward beside cuDNN (scratch/attention_d64_ncu_probe.py); the raw
# metrics of every profiled kernel come back as CSV.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 400 $NCU --profile-from-start off --set full --clock-control none --nvtx -o $OUT/d64 \
  python3 scratch/attention_d64_ncu_probe.py 2>&1 | grep -v -i warn | tail -15
$NCU --import $OUT/d64.ncu-rep --page raw --csv > $OUT/d64_raw.csv 2>&1
$NCU --import $OUT/d64.ncu-rep --page details --csv > $OUT/d64_details.csv 2>&1
ls -la $OUT; rm -f $OUT/d64.ncu-rep.big
