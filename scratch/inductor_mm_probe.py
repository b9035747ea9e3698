"""Probe: what torch.compile max-autotune runs for matmul suite shapes (bf16), timed against ours and
cuBLAS in one process (benchmarks.timing.Timer: CUDA events, L2 write-flushed, alternating rounds).
Inductor's generated code (the chosen template's source and constexprs) lands in
$OUT/inductor_cache; its autotune tables go to stderr."""
import json, os, statistics, sys
sys.path.insert(0, ".")
out_dir = os.environ.get("OUT", ".")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(out_dir, "inductor_cache"))
import torch
import helion_kernels as hk
from benchmarks.timing import Timer

SHAPES = [(int(s.split("x")[0]), int(s.split("x")[1]), int(s.split("x")[2])) for s in sys.argv[1:]]
timer = Timer(torch.device("cuda"))
rows = []
for m, n, k in SHAPES:
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) / k ** 0.5
    torch._dynamo.reset()
    compiled = torch.compile(torch.mm, mode="max-autotune-no-cudagraphs")
    fns = {"ours": lambda: hk.matmul(a, b), "cublas": lambda: torch.mm(a, b), "inductor": lambda: compiled(a, b)}
    ref = torch.mm(a.double(), b.double())
    err = {name: (fn().double() - ref).abs().max().item() for name, fn in fns.items()}
    times = {name: [] for name in fns}
    for _ in range(5):
        for name, fn in fns.items():
            times[name].append(timer.device_us(fn))
    med = {name: statistics.median(v) for name, v in times.items()}
    row = {"shape": [m, n, k], "us": med, "ours_vs_cublas": med["cublas"] / med["ours"],
           "inductor_vs_cublas": med["cublas"] / med["inductor"], "max_err": err}
    print(json.dumps(row), flush=True)
    rows.append(row)
json.dump(rows, open(os.path.join(out_dir, "inductor_mm_probe.json"), "w"), indent=1)
