# Config probe of the backward with both kernels in Gluon (dk/dv's lse and delta by row copies)
# against the H100 table's entries (dq in Gluon, dk/dv in Triton)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 500 python3 tools/config_probe.py time scratch/gluon_bwd_row_copy_jobs.json --rounds 5 --table tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json --out $OUT 2>&1 | grep -v Warning | tail -40
