# GPU run for the lowered attention backward: its tests, the unspecialized-bounds A/B, then the
# config probe of dq in Gluon beside the Triton dk/dv kernel against the tuned entries
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 170 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 tests/dsl/test_gluon_backend.py -k backward 2>&1 | grep -E "Error|passed|failed|^FAILED" | head -30 | tee $OUT/gluon_tests.txt
timeout 120 python3 scratch/gluon_unspecialized_ab.py 2>&1 | grep -v -i warn | tail -6
timeout 240 python3 tools/config_probe.py time scratch/gluon_bwd_mixed_jobs.json --rounds 5 --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail -30
