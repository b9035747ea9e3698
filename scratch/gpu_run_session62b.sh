#!/bin/bash
# Sixty-second session, second call: the GPU tests of the new ordering and elementary functions (torch.sort / topk /
# flip / roll, log1p ... tril; tests/dsl/test_ordering.py, test_elementary.py) and of the torch functions; then a config probe of the bf16 row
# forwards where Liger led on the H100 (softmax 16384x4096 0.977x, 4096x16384 0.982x, RMSNorm
# 16384x4096 0.985x; scratch/session62_row_fwd_peer_jobs.json), applied at 2% to this GPU's table,
# regenerated and tested, and those rows timed against their peers by the report (--only).
#   bash scratch/gpu_run_session62b.sh   (carry [".whl"])
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
HK_TEST_DEVICE=cuda timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 12 -p no:cacheprovider -p no:benchmark \
  --timeout 150 -rf --tb=short tests/dsl/test_ordering.py tests/dsl/test_elementary.py tests/dsl/test_torch_functions.py > $OUT/dsl_ordering.txt 2>&1
grep -E "FAILED|passed|failed|^E  " $OUT/dsl_ordering.txt | cut -c1-300 | tail -12
echo "dsl tests: $(( $(date +%s) - start )) s"
TABLE=tuned_configs/sm_90.json
[[ "$gpu" == *H100* ]] && TABLE=tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
mkdir -p $OUT/probe $OUT/after $OUT/report
timeout 200 python3 tools/config_probe.py time scratch/session62_row_fwd_peer_jobs.json --rounds 5 --table $TABLE --out $OUT/probe 2>&1 \
  | grep -v Warning | tail -30
python3 tools/config_probe.py apply $OUT/probe/config_probe.json --table $TABLE --min-gain 0.02 2>&1 | tail -6
timeout 90 python3 -m build_tools generate 2>&1 | tail -2
cp $TABLE $OUT/after/ && cp -r helion_kernels/_generated $OUT/after/
HK_TEST_DEVICE=cuda timeout 90 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 80 -rf \
  --tb=short tests/kernels/test_shipped_variants_aligned.py -k "softmax_fwd or rms_norm_fwd" > $OUT/aligned.txt 2>&1
grep -E "FAILED|passed|failed" $OUT/aligned.txt | cut -c1-300 | tail -6
echo "probe and tests: $(( $(date +%s) - start )) s"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
left=$(( 560 - ($(date +%s) - start) ))
PYTHONPATH=/tmp/site:$PWD timeout -s TERM -k 10 $left python3 -m benchmarks.report --out $OUT/report --budget-s $(( left - 20 )) \
  --only softmax_fwd:M=16384,N=4096 --only softmax_fwd:M=4096,N=16384 --only rmsnorm_fwd:M=16384,N=4096 2>&1 | grep -v -i warn | tail -3
grep -E "^\| (16384×4096|4096×16384) \| (ours|liger|compile)" $OUT/report/RESULTS.md | cut -c1-110
echo "total: $(( $(date +%s) - start )) s"
