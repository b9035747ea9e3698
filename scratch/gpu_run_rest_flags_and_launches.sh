#!/bin/bash
# Queued by the fifty-sixth session for an H100: the GPU tests of that session's DSL features (host
# reads, `continue`, run-time-sized allocations), the RMSNorm launches probe at 64x4096 (ours against
# torch.compile, scratch/rms_norm_launches_probe.py), then the whole-kernel flag steps that session
# did not time (scratch/session56_h100_row_flag_jobs_rest.json: float32 RMSNorm forward and float32
# softmax, 24 jobs, 78 variants) through scratch/gpu_run_session56_flags.sh within LIMIT seconds.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
timeout 120 python3 -m pytest -q -m "gpu or not gpu" -p no:cacheprovider -p no:benchmark tests/dsl/test_host_reads.py \
  tests/dsl/test_control_flow.py -k "continue or read or sized or count" 2>&1 | tail -3
mkdir -p $OUT/launches && OUT=$OUT/launches timeout 120 python3 scratch/rms_norm_launches_probe.py 64x4096 2>&1 \
  | grep -v -i "warn\|inductor\|important use" | tail -40
LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - start) )) bash scratch/gpu_run_session56_flags.sh scratch/session56_h100_row_flag_jobs_rest.json
echo "total: $(( $(date +%s) - start )) s"
