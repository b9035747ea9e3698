#!/bin/bash
# Fortieth session's last device call: the attention kernel and API tests on the GPU (the new H200
# backward entries), the long-row softmax bound probe, then the report's D64 backward rows (the
# rows the new entries touch) with their peers, into $OUT/bwd_rows.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout 150 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 120 -rf tests/kernels/test_attention.py tests/runtime/test_api_attention.py 2>&1 | grep -E "passed|failed|^FAILED" | tail -10 | tee $OUT/gpu_tests.txt
timeout 150 python3 scratch/longrow_softmax_bound_probe.py 2>&1 | grep -v Warn | tail -8
mkdir -p $OUT/bwd_rows
timeout -s TERM -k 15 200 python3 -m benchmarks.report --out $OUT/bwd_rows --budget-s 170 --only attention_bwd:D=64 2>&1 | grep -v -i warn | tail -4
