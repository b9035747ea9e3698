#!/bin/bash
# Forty-eighth session's second device call: the PDL split-K probe (scratch/pdl_splitk_probe.py),
# then a config probe of JOBS (gpu_run_session46.sh), its timing cut to what is left of LIMIT.
#   LIMIT=570 bash scratch/gpu_run_session48.sh JOBS
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
mkdir -p $OUT/pdl
OUT=$OUT/pdl timeout -s TERM 150 python3 scratch/pdl_splitk_probe.py 2>&1 | grep -v Warning | tail -60
LIMIT=$(( ${LIMIT:-570} - ($(date +%s) - start) )) bash scratch/gpu_run_session46.sh "$1"
