#!/bin/bash
# A config probe whose compiles run first in parallel: one process per (job, variant) fills Triton's
# on-disk cache (one timing round, results thrown away), then one process times every job in
# alternating rounds with the cache warm. Usage: bash scratch/gpu_run_probe_parallel_warm.sh JOBS TABLE [PHASE]
# PHASE "warm" or "time" runs one half (so that other work can run between them); WARM_PROCS
# sets the parallel compiles (14). The warm-up writes /tmp/warm/kept_jobs.json, the jobs less the
# variants whose warm-up did not finish, and the timing times those.
set -u
JOBS=$1; TABLE=$2; PHASE=${3:-both}
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
if [ "$PHASE" != time ]; then
rm -rf /tmp/warm; mkdir -p /tmp/warm
python3 - "$JOBS" <<'PY'
import json, sys
for i, job in enumerate(json.load(open(sys.argv[1]))):
    for j, (label, overrides) in enumerate(job["variants"].items()):
        json.dump([{**job, "variants": {label: overrides}}], open(f"/tmp/warm/job_{i}_{j}.json", "w"))
PY
start=$(date +%s)
ls /tmp/warm/job_*.json | xargs -P ${WARM_PROCS:-14} -I{} sh -c 'timeout 300 python3 tools/config_probe.py time {} --rounds 1 --table '"$TABLE"' --out {}.d > {}.log 2>&1'
echo "warm-up compiles: $(( $(date +%s) - start )) s"
grep -h -E "failed|rejected|differ" /tmp/warm/*.log | head -20
# the jobs less the variants whose warm-up did not finish (a compile past 300 s, a failure): timed,
# the timing process would compile them itself and spend its time limit on them
python3 - "$JOBS" <<'PY'
import json, os, sys
jobs, kept = json.load(open(sys.argv[1])), []
for i, job in enumerate(jobs):
    variants = {}
    for j, (label, overrides) in enumerate(job["variants"].items()):
        result = f"/tmp/warm/job_{i}_{j}.json.d/config_probe.json"
        if os.path.exists(result) and label in json.load(open(result))[0]["times"]:
            variants[label] = overrides
        else:
            print("left out (no warm-up result):", job["op"], job["dtype"], json.dumps(job["shape"]), job.get("dtypes", ""), label)
    if variants:
        kept.append({**job, "variants": variants})
json.dump(kept, open("/tmp/warm/kept_jobs.json", "w"), indent=1)
PY
JOBS=/tmp/warm/kept_jobs.json
fi
[ "$PHASE" = warm ] && exit 0
timeout -s TERM 400 python3 tools/config_probe.py time "$JOBS" --rounds 5 --table "$TABLE" --out $OUT 2>&1 | grep -v Warning | tail -80
