# GPU run after the backward entries moved to both kernels in Gluon: the Gluon, attention, public
# attention and dispatch tests (every mark), then the backward against cuDNN at the report's shapes
# (Ran with notes/gluon_row_tma.patch applied, never on main, kept in git history at 316e2ef; see notes/gluon_backend.md.)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -q -m "gpu or not gpu" -n 15 -p no:cacheprovider -p no:benchmark --timeout 300 -rf tests/dsl/test_gluon_backend.py tests/kernels/test_attention.py tests/runtime/test_api_attention.py tests/runtime/test_dispatch.py 2>&1 | tail -15 | tee $OUT/gpu_tests.txt
timeout 200 python3 scratch/bwd_vs_cudnn.py 2>&1 | grep -v -i warn | tee $OUT/bwd_vs_cudnn.txt
