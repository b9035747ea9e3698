#!/bin/bash
# Queued by the fifty-sixth session for an H100: the GPU tests of that session's DSL features (host
# reads, `continue`, run-time-sized allocations) and of the RMSNorm variants at their entries'
# widths (tests/kernels/test_shipped_variants_aligned.py), the bf16 RMSNorm backward at 2-1,024
# rows (scratch/rms_norm_bwd_small_rows_probe.py), the RMSNorm launches probe at 64x4096 (ours against
# torch.compile, scratch/rms_norm_launches_probe.py), then the whole-kernel flag steps that session
# did not time (scratch/session56_h100_row_flag_jobs_rest.json: float32 RMSNorm forward and float32
# softmax, 24 jobs, 78 variants) through scratch/gpu_run_session56_flags.sh within LIMIT seconds.
# Their kernels were compiled on the CPU machine for the GPU's Triton if it is PyPI's cp312 3.6.0
# wheel (scratch/fill_triton_cache.py); rebuild the cache on the commit sent, then carry it:
#   TRITON_CACHE_DIR=/tmp/hk_triton_cache python3 scratch/fill_triton_cache.py \
#     scratch/session56_h100_row_flag_jobs_rest.json tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json KEY /tmp/kept.json
#   tar czf .cache_carry/h100_rest_flags.tgz -C / tmp/hk_triton_cache
#   sha256sum < KEY | cut -d' ' -f1 > .cache_carry/h100_rest_flags.key   (the runner uses the cache only on a match)
#   PREFILLED=.cache_carry/h100_rest_flags.tgz LIMIT=540 bash scratch/gpu_run_rest_flags_and_launches.sh  (carry [".cache_carry"])
# (KEY: `scratch/triton_key.py --full KEY` run by a Python 3.12 with that wheel on its path.)
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout 120 python3 -m pytest -q -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark tests/dsl/test_host_reads.py \
  tests/dsl/test_control_flow.py -k "continue or read or sized or count" 2>&1 | tail -3
timeout 200 python3 -m pytest -q -m "gpu or not gpu" -n 8 -p no:cacheprovider -p no:benchmark --timeout 150 \
  tests/kernels/test_shipped_variants_aligned.py -k rms > $OUT/aligned_tests.txt 2>&1; tail -3 $OUT/aligned_tests.txt
mkdir -p $OUT/small_rows && OUT=$OUT/small_rows timeout 120 python3 scratch/rms_norm_bwd_small_rows_probe.py 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -8
mkdir -p $OUT/launches && OUT=$OUT/launches timeout 120 python3 scratch/rms_norm_launches_probe.py 64x4096 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -40
LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - start) )) PREFILLED=${PREFILLED:-} bash scratch/gpu_run_session56_flags.sh \
  scratch/session56_h100_row_flag_jobs_rest.json
echo "total: $(( $(date +%s) - start )) s"
