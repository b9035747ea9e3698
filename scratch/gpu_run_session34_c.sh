#!/bin/bash
# Thirty-fourth session (H200): the forward with its scale inside the exponential's argument, A/B
# against the module built before (carried as .out/old_attention.py), after the attention kernel
# tests and the Gluon forward tests on the GPU; compiles of the A/B run first, in parallel.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
seq 0 14 | xargs -P 8 -I{} sh -c 'timeout 240 python3 scratch/attention_fwd_source_ab.py .out/old_attention.py $OUT {} > /tmp/warm_{}.log 2>&1' &
timeout -s TERM 200 python3 -m pytest -q -m "gpu or not gpu" -n 6 -p no:cacheprovider -p no:benchmark --timeout 200 -rf \
  tests/kernels/test_attention.py tests/dsl/test_gluon_backend.py -k "fwd or forward or persistent" 2>&1 | tail -4
echo "tests: $(( $(date +%s) - start )) s"
wait
echo "warm: $(( $(date +%s) - start )) s"; grep -l -i error /tmp/warm_*.log | head; 
timeout -s TERM 200 python3 scratch/attention_fwd_source_ab.py .out/old_attention.py $OUT 2>&1 | grep -v Warn | tail -20
echo "total: $(( $(date +%s) - start )) s"
