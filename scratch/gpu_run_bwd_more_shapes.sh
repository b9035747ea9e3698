# Config probe of the backward in Gluon at the suite's other shapes: D128 S1024 causal (MHA, and
# GQA from the H200 table) and D64 (H200 table entries), against what the H100 runs there now
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 540 python3 tools/config_probe.py time scratch/gluon_bwd_more_shapes_jobs.json --rounds 5 --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail -50
