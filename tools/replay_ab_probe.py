"""`python tools/replay_ab_probe.py [inference|nograd]` on a GPU host (OUT=DIR to keep the JSON):
per-call host time of the public API with the native replay of direct calls against the same API
with the replay unbound (the Python direct path), and eager PyTorch, at decode sizes (RMSNorm and
softmax 1/16/64x4096, matmul 1/16x4096x4096, linear with and without bias 16x4096x4096). Paired: 25 rounds
of 500-call loops, each ended by a synchronize, the two paths in alternating order; medians and
the median of the rounds' differences. Both paths' outputs are checked equal first."""
import json
import os
import statistics
import sys
import time

import torch
import helion_kernels as hk
from helion_kernels import _direct

dev = "cuda"
bf = torch.bfloat16
torch.manual_seed(0)
cases = {}
for m in (1, 16, 64):
    x = torch.randn(m, 4096, device=dev, dtype=bf); w = torch.randn(4096, device=dev, dtype=bf)
    cases[f"rms_norm {m}x4096"] = (lambda x=x, w=w: hk.rms_norm(x, (4096,), w, 1e-6),
                                   lambda x=x, w=w: torch.nn.functional.rms_norm(x, (4096,), w, 1e-6))
    cases[f"rmsnorm {m}x4096"] = (lambda x=x, w=w: hk.rmsnorm(x, w), None)
    cases[f"softmax {m}x4096"] = (lambda x=x: hk.softmax(x, dim=-1), lambda x=x: torch.softmax(x, -1))
a = torch.randn(16, 4096, device=dev, dtype=bf); b = torch.randn(4096, 4096, device=dev, dtype=bf)
cases["matmul 16x4096x4096"] = (lambda: hk.matmul(a, b), lambda: torch.matmul(a, b))
wl = torch.randn(4096, 4096, device=dev, dtype=bf); bias = torch.randn(4096, device=dev, dtype=bf)
cases["linear+bias 16x4096x4096"] = (lambda: hk.linear(a, wl, bias), lambda: torch.nn.functional.linear(a, wl, bias))
cases["linear 16x4096x4096"] = (lambda: hk.linear(a, wl), lambda: torch.nn.functional.linear(a, wl))
a1 = torch.randn(1, 4096, device=dev, dtype=bf)
cases["matmul 1x4096x4096"] = (lambda: hk.matmul(a1, b), lambda: torch.matmul(a1, b))

mode = sys.argv[1] if len(sys.argv) > 1 else "inference"
ctx = torch.inference_mode() if mode == "inference" else torch.no_grad()
ctx.__enter__()
for name, (ours, eager) in cases.items():  # warm: compile, native build, plans, recording
    for _ in range(4):
        ours()
        if eager: eager()
torch.cuda.synchronize()
replayer = _direct.replay
print("replay bound:", replayer is not _direct._no_replay, "tags:", len(_direct.REPLAYS), flush=True)

def bind(on):
    _direct.replay = replayer if on else _direct._no_replay

def per_call(f, n=500):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6

for name, (ours, eager) in cases.items():
    bind(False); o1 = ours(); bind(True); o2 = ours()
    assert torch.equal(o1, o2), name
results = {}
for name, (ours, eager) in cases.items():
    rows = {"python": [], "replay": [], "eager": []}
    for r in range(25):
        order = [("python", False), ("replay", True)]
        if r % 2:
            order.reverse()
        for label, on in order:
            bind(on)
            rows[label].append(per_call(ours))
        if eager:
            rows["eager"].append(per_call(eager))
    bind(True)
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    diffs = [n - t for n, t in zip(rows["replay"], rows["python"])]
    results[name] = {**med, "paired diff median": statistics.median(diffs)}
    e = med.get("eager")
    print(f"{name:26s} python {med['python']:6.2f}  replay {med['replay']:6.2f}  diff {statistics.median(diffs):+.2f} us"
          + (f"  eager {e:6.2f}  eager/replay {e/med['replay']:.2f}x" if e else ""), flush=True)
out = os.environ.get("OUT")
if out:
    json.dump(results, open(os.path.join(out, f"replay_ab_{mode}.json"), "w"), indent=1)
