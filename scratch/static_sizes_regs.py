"""Registers of table configs with and without static_reduction_sizes (cross-compiled for sm_90)."""
import json, sys
import torch
import kernels_src
from build_tools.dsl.config import Config
from build_tools.cross_compile import cross_compile

table = json.load(open(sys.argv[1]))
ops = sys.argv[2].split(",")
for e in table["entries"]:
    if e["op"] not in ops or e["dtype"] != "bfloat16":
        continue
    spec = next(s for s in kernels_src.ALL_OPS if s.name == e["op"])
    args = spec.make_inputs(e["shape"], torch.bfloat16, "cpu", 0)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    row = []
    for flag in (False, True):
        cfg = bound.config_spec.normalize(Config({**e["config"], "static_reduction_sizes": flag}))
        try:
            infos = [c.ptxas_info() for c in cross_compile(bound, args, cfg)]
            row.append(" ".join(f"{i['registers']}r/{i['spill_stores']}s" for i in infos))
        except Exception as err:
            row.append(f"ERR {type(err).__name__}: {str(err)[:200]}")
    print(e["op"], json.dumps(e["shape"]), e["config"].get("num_warps"), "|", row[0], "->", row[1], flush=True)
