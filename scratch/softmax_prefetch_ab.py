"""Probe: the split-row softmax with the second walk's first tile loaded before the wait (new
generated module) against the previous module (wait, then load), per split-row entry of the H100
table; generated functions called directly, benchmarks.timing.Timer (CUDA events, L2
write-flushed), alternating rounds, one process. The old files come from the commit before:
    git show 903b6d9:helion_kernels/_generated/softmax.py > scratch/old_softmax_gen.py
    git show 903b6d9:tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json > scratch/old_h100.json"""
import importlib.util, json, os, statistics, sys
import torch
sys.path.insert(0, ".")
from benchmarks.timing import Timer
from helion_kernels._generated import softmax as new_mod

spec = importlib.util.spec_from_file_location("old_softmax", "scratch/old_softmax_gen.py")
old_mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(old_mod)


def split_entries(path):
    return {(e["op"], e["dtype"], json.dumps(e["shape"])): e["variant"] for e in json.load(open(path))["entries"]
            if e["op"].startswith("softmax") and e["config"].get("split_rows")}


old_t, new_t = split_entries("scratch/old_h100.json"), split_entries("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json")
timer = Timer(torch.device("cuda"))
rows = []
for key in sorted(old_t):
    op, dtype_name, shape = key[0], key[1], json.loads(key[2])
    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape["M"], shape["N"], device="cuda", dtype=dtype, generator=g) * 3
    y = torch.softmax(x.float(), -1).to(dtype)
    dy = torch.randn(shape["M"], shape["N"], device="cuda", dtype=dtype, generator=g)
    args = (x, dtype) if op == "softmax_fwd" else (dy, y, dtype)
    fns = {"old": getattr(old_mod, f"{op}__{old_t[key]}"), "new": getattr(new_mod, f"{op}__{new_t[key]}")}
    outs = {k: f(*args) for k, f in fns.items()}
    times = {k: [] for k in fns}
    for _ in range(7):
        for k, f in fns.items():
            times[k].append(timer.device_us(lambda: f(*args)))
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"op": op, "dtype": dtype_name, "shape": shape, "old_us": med["old"], "new_us": med["new"],
           "speedup": med["old"] / med["new"], "identical": torch.equal(outs["old"], outs["new"])}
    print(json.dumps(row), flush=True)
    rows.append(row)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "softmax_prefetch_ab.json"), "w"), indent=1)
