"""Probe: RMSNorm backward with the host's sum and cast (old generated module) against the sum pass
(new module), same main kernel, per sm_90.json entry; CUDA events, L2 flushed, alternating rounds.
It ran with the sum pass in every migrated sm_90.json entry (64-column tiles, 64 partial rows per
step), before the table kept "host" there. The old files come from the commit before the sum pass:
    git show 5a6ff9a:helion_kernels/_generated/rms_norm.py > scratch/old_rms_norm_gen.py
    git show 5a6ff9a:tuned_configs/sm_90.json > scratch/old_sm_90.json"""
import importlib.util, json, os, statistics, sys
import torch
sys.path.insert(0, ".")
from helion_kernels._generated import rms_norm as new_mod

spec = importlib.util.spec_from_file_location("old_rms", "scratch/old_rms_norm_gen.py")
old_mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(old_mod)
old_t = {(e["dtype"], json.dumps(e["shape"])): e["variant"] for e in json.load(open("scratch/old_sm_90.json"))["entries"] if e["op"] == "rms_norm_bwd"}
new_t = {(e["dtype"], json.dumps(e["shape"])): e["variant"] for e in json.load(open("tuned_configs/sm_90.json"))["entries"] if e["op"] == "rms_norm_bwd"}
flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
ev = lambda: torch.cuda.Event(enable_timing=True)
out = []
for key in sorted(old_t):
    dtype, shape = getattr(torch, key[0]), json.loads(key[1])
    m, n = shape["M"], shape["N"]
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    dy = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(n, device="cuda", dtype=dtype, generator=g) * 0.5 + 1
    inv = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
    fns = {"old": getattr(old_mod, f"rms_norm_bwd__{old_t[key]}"), "new": getattr(new_mod, f"rms_norm_bwd__{new_t[key]}")}
    res = {k: f(dy, x, w, inv) for k, f in fns.items()}
    ref = (dy.double() * (x.double() * inv.double()[:, None])).sum(0)
    errs = {k: (r[1].double() - ref).abs().max().item() for k, r in res.items()}
    same_dx = torch.equal(res["old"][0], res["new"][0])
    times = {k: [] for k in fns}
    for _ in range(40):
        for k, f in fns.items():
            flush.zero_(); torch.cuda._sleep(100000)
            s, e = ev(), ev(); s.record(); f(dy, x, w, inv); e.record(); torch.cuda.synchronize()
            times[k].append(s.elapsed_time(e) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"dtype": key[0], "shape": shape, "old_us": med["old"], "new_us": med["new"], "speedup": med["old"] / med["new"],
           "dw_err_vs_f64": errs, "dx_identical": same_dx}
    print(json.dumps(row)); out.append(row)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "rms_bwd_ab.json"), "w"), indent=1)
