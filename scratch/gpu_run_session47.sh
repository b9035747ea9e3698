#!/bin/bash
# Forty-seventh session's last device run: a config probe's confirm round (JOBS, compiled in
# parallel first, its timing cut to PROBE_S seconds), then the H200 report (benchmarks.report) of
# the commit checked out, with Liger-Kernel from .whl (carry [".whl"]).
#   PROBE_S=120 bash scratch/gpu_run_session47.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
mkdir -p $OUT/probe
OUT=$OUT/probe WARM_PROCS=14 bash scratch/gpu_run_probe_parallel_warm.sh $1 tuned_configs/sm_90.json warm
timeout -s TERM ${PROBE_S:-120} python3 tools/config_probe.py time "$1" --rounds 5 --out $OUT/probe 2>&1 | grep -v Warning | tail -40
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 15 420 python3 -m benchmarks.report --out $OUT --budget-s 370 --missed ../MISSED.md 2>&1 | grep -v -i warn | tail -4
