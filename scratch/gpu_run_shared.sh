# GPU run for the dk/dv kernel's operands in shared memory (`shared_operands`) and its lse and delta
# columns by TMA: the backward's Gluon tests, per-kernel times, then the config probe of both
# kernels in Gluon against the table's entries
# (Ran with notes/gluon_row_tma.patch applied, never on main, kept in git history at 316e2ef; see notes/gluon_backend.md.)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider -p no:benchmark --timeout 140 tests/dsl/test_gluon_backend.py 2>&1 | grep -E "Error|passed|failed|^FAILED" | head -30 | tee $OUT/gluon_tests.txt
timeout 130 python3 scratch/gluon_bwd_kernel_split.py 2>&1 | grep -v -i warn | tee $OUT/kernel_split.txt
timeout 290 python3 tools/config_probe.py time scratch/gluon_bwd_shared_jobs.json --rounds 5 --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail -40
