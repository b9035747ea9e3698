#!/bin/bash
# Fifty-fourth session's report call, on an H100 or an H200: the report (benchmarks.report) of the
# commit checked out, every row in plan order within REPORT_S, with Liger-Kernel from .whl (carry
# [".whl"]). RESULTS.md links ../MISSED.md on an H200 (benchmarks/h200/) and MISSED.md on an H100.
#   HK_COMMIT=<short hash of the tree sent> REPORT_S=480 bash scratch/gpu_run_session54_b.sh
# (the hash computed on the sending machine: the device copy may carry a stale .git; benchmarks/README.md)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt)
echo "$NAME"
MISSED=MISSED.md; echo "$NAME" | grep -q H200 && MISSED=../MISSED.md
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 $(( ${REPORT_S:-480} + 60 )) python3 -m benchmarks.report --out $OUT \
  --budget-s ${REPORT_S:-480} --missed $MISSED 2>&1 | grep -v -i warn | tail -6
