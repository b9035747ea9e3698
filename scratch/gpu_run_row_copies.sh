# GPU run for the row copies (the dk/dv kernel's lse and delta columns copied by the loader with
# cp.async): the Gluon back end's GPU tests, then per-kernel times of the backward's kernels
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 280 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark --timeout 260 -rf tests/dsl/test_gluon_backend.py 2>&1 | grep -E "Error|passed|failed|^FAILED" | head -30 | tee $OUT/gluon_tests.txt
timeout 150 python3 scratch/gluon_bwd_kernel_split.py 2>&1 | grep -v -i warn | tee $OUT/kernel_split.txt
