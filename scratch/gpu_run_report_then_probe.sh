#!/bin/bash
# One device call: the report (benchmarks.report, Liger-Kernel from .whl: carry [".whl"]) of the
# commit checked out, with REPORT_S seconds of budget, written under $OUT; then the config probe
# JOBS against TABLE (gpu_run_probe_parallel_warm.sh's compiles first), its timing cut to what is
# left of LIMIT, written under $OUT/probe. MISSED is the link the report writes for MISSED.md
# (MISSED.md for benchmarks/RESULTS.md, ../MISSED.md for benchmarks/h200/RESULTS.md).
#   HK_COMMIT=<hash> REPORT_S=330 LIMIT=570 MISSED=MISSED.md TABLE=table.json \
#     bash scratch/gpu_run_report_then_probe.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 $(( ${REPORT_S:-330} + 50 )) python3 -m benchmarks.report \
  --out $OUT --budget-s ${REPORT_S:-330} --missed ${MISSED:-MISSED.md} 2>&1 | grep -v -i warn | tail -4
export PYTHONPATH=$PWD
mkdir -p $OUT/probe
OUT=$OUT/probe WARM_PROCS=${WARM_PROCS:-14} bash scratch/gpu_run_probe_parallel_warm.sh "$1" "$TABLE" warm
left=$(( ${LIMIT:-570} - ($(date +%s) - start) ))
echo "timing for at most $left s"
timeout -s TERM $left python3 tools/config_probe.py time "$1" --rounds 5 --table "$TABLE" --out $OUT/probe 2>&1 \
  | grep -v Warning | tail -80
