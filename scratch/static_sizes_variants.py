"""Registers of job-file variants with and without static_reduction_sizes (cross-compiled, sm_90)."""
import json, sys
import torch
import kernels_src
from build_tools.dsl.config import Config
from build_tools.cross_compile import cross_compile

table = json.load(open(sys.argv[1]))
for job in json.load(open(sys.argv[2])):
    e = next(x for x in table["entries"] if x["op"] == job["op"] and x["dtype"] == job["dtype"] and x["shape"] == job["shape"])
    spec = next(s for s in kernels_src.ALL_OPS if s.name == job["op"])
    args = spec.make_inputs(job["shape"], getattr(torch, job["dtype"]), "cpu", 0)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    for label, over in job["variants"].items():
        row = []
        for flag in (False, True):
            cfg = bound.config_spec.normalize(Config({**e["config"], **over, "static_reduction_sizes": flag}))
            infos = [c.ptxas_info() for c in cross_compile(bound, args, cfg)]
            row.append(" ".join(f"{i['registers']}r/{i['spill_stores']}s" for i in infos))
        print(job["op"], json.dumps(job["shape"]), label, "|", row[0], "->", row[1], flush=True)
