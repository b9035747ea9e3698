#!/bin/bash
# Fifty-third session: the RMSNorm mixed-dtype probe (autocast's float32 rms_norm of bf16 rows, and
# a float32 weight beside bf16 rows) on a quiet GPU, then the GPU tests of the change, verbose.
#   PROBE_S=230 TESTS_S=250 bash scratch/gpu_run_session53.sh
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
timeout ${PROBE_S:-230} python3 scratch/rms_norm_mixed_dtype_probe.py 2>&1 | grep -v -i "warn\|inductor\|important use" | tail -30
echo "probe: $(( $(date +%s) - start )) s"
CHANGED="tests/kernels/test_rms_norm.py tests/kernels/test_shipped_variants.py tests/kernels/test_static_variants.py
 tests/runtime/test_api_rms_norm.py tests/runtime/test_torch_semantics.py tests/runtime/test_compile_opcheck.py
 tests/runtime/test_eager_autograd.py tests/runtime/test_dispatch.py tests/runtime/test_api_softmax.py
 tests/runtime/test_direct.py tests/runtime/test_explain_patch_info.py tests/runtime/test_cuda_graphs.py
 tests/dsl/test_launch_limits.py"
timeout ${TESTS_S:-250} python3 -m pytest -v -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 200 \
  $CHANGED > $OUT/gpu_tests_verbose.txt 2>&1
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_tests_verbose.txt | tail -30
grep -c " PASSED" $OUT/gpu_tests_verbose.txt
echo "total: $(( $(date +%s) - start )) s"
