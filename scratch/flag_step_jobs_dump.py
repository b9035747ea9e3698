"""Writes `config_probe.py time --flag-steps` jobs to a file, each variant that normalizes to the
tuned config or to an earlier variant left out (normalized here, on the CPU), so that
scratch/gpu_run_probe_parallel_warm.sh can warm their compiles in parallel.
    python3 scratch/flag_step_jobs_dump.py TABLE OPS OUT [SHAPE_FILTER_PY]"""
import json
import sys

import torch

from build_tools.dsl.config import Config
from tools.config_probe import _spec, distinct_configs, flag_step_jobs

table_path, ops, out = sys.argv[1:4]
keep = eval(sys.argv[4]) if len(sys.argv) > 4 else (lambda job: True)
table = json.load(open(table_path))
jobs = []
for job in flag_step_jobs(table, ops.split(",")):
    if not keep(job):
        continue
    entry = next(e for e in table["entries"] if (e["op"], e["dtype"], e["shape"]) == (job["op"], job["dtype"], job["shape"]))
    spec = _spec(job["op"])
    spec.kernel.reset()
    bound = spec.kernel.bind(spec.make_inputs(job["shape"], getattr(torch, job["dtype"]), "cpu", 0))
    configs = {"tuned": bound.config_spec.normalize(Config(entry["config"]))}
    notes = {}
    for label, overrides in job["variants"].items():
        try:
            configs[label] = bound.config_spec.normalize(Config({**entry["config"], **overrides}))
        except Exception as error:
            notes[label] = str(error)
    kept = distinct_configs(configs, notes)
    variants = {label: job["variants"][label] for label in kept if label != "tuned"}
    if variants:
        jobs.append({**job, "variants": variants})
json.dump(jobs, open(out, "w"), indent=1)
print(len(jobs), "jobs", sum(len(j["variants"]) for j in jobs), "variants")
