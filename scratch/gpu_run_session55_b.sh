#!/bin/bash
# Fifty-fifth session's third call, on an H100: the knob steps of the RMSNorm backward's
# float32-weight entry at 16384x4096 around its reload_rows config (warm-up compiles in parallel,
# then 5 rounds), the D64 causal S8192 attention backward's num_stages winner confirmed alone in
# 10 rounds, then the softmax float32-output probe.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
start=$(date +%s)
mkdir -p $OUT/rms $OUT/att
WARM_PROCS=14 OUT=$OUT/rms bash scratch/gpu_run_probe_parallel_warm.sh scratch/session55_h100_rms_bwd_4096_reload_steps_jobs.json \
  tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json
timeout 150 python3 tools/config_probe.py time scratch/session55_h100_attention_confirm_jobs.json --rounds 10 \
  --table tuned_configs/sm_90.json --out $OUT/att 2>&1 | grep -v Warning | tail
echo "probes: $(( $(date +%s) - start )) s"
timeout 150 python3 scratch/softmax_float32_output_probe.py 2>&1 | grep -v -i "warn\|inductor\|online softmax\|important use" | tail -14
echo "total: $(( $(date +%s) - start )) s"
