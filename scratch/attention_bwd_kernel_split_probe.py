"""Probe: the attention backward's two kernels (dq, then dk/dv) timed separately under each config
(torch.profiler, CUDA kernel times, L2 flushed between calls), to see whether the two kernels want
different warp counts: the DSL gives every top-level loop of a config the same num_warps and
num_stages, and the D128 causal entries' dq kernel spills at 4 warps (128-row query tiles)."""
import collections
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, ".")
from build_tools.autotune.table import load_table
from kernels_src import attention

CALLS = 10
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
table = load_table("tuned_configs/sm_90.json")
rows = []
for entry in table["entries"]:
    shape = entry["shape"]
    if entry["op"] != "attention_bwd" or entry["dtype"] != "bfloat16" or shape["D"] != 128 or shape["B"] != 4:
        continue
    generator = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = attention._qkv(shape, torch.bfloat16, "cuda", generator)
    scale = shape["D"] ** -0.5
    out, lse = attention.attention_fwd(q, k, v, shape["causal"], scale)
    grad_out = torch.randn_like(out)
    args = (grad_out, q, k, v, out, lse, shape["causal"], scale)
    bound = attention.attention_bwd.bind(args)
    base = dict(entry["config"])
    for label, overrides in (("tuned", {}), ("4 warps", {"num_warps": 4}), ("8 warps", {"num_warps": 8})):
        config = {**base, **overrides}
        if label != "tuned" and config == base:
            continue
        fn = bound.compile_config(config)
        try:
            for _ in range(3):
                fn(*args)
        except Exception as error:  # a config past the GPU's resources
            rows.append({"shape": shape, "config": label, "error": str(error)[:200]})
            continue
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS):
                flush.zero_()
                fn(*args)
            torch.cuda.synchronize()
        per_kernel = collections.defaultdict(float)
        for event in prof.events():
            if event.device_type.name == "CUDA" and "attention_bwd" in event.name:
                per_kernel[event.name] += event.device_time / CALLS
        row = {"shape": shape, "config": label, "warps": config["num_warps"], "block_sizes": config["block_sizes"],
               "us": {name: round(us, 1) for name, us in per_kernel.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "attention_bwd_kernel_split.json"), "w"), indent=1)
