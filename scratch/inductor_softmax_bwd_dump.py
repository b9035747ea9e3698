"""Probe: the Triton kernel torch.compile (default mode) generates for softmax's backward
(aten._softmax_backward_data, bf16), the config its autotuner picked, and its time against ours
(benchmarks.timing.Timer, alternating rounds, one process). Output code goes to stderr with
TORCH_LOGS=output_code. An experiment, not library code."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
from benchmarks.timing import Timer
from helion_kernels._ops.softmax import _bwd_impl

shapes = [(2048, 32000), (1, 32000)]
timer = Timer(torch.device("cuda"))
rows = []
for m, n in shapes:
    torch._dynamo.reset()
    compiled = torch.compile(lambda dy, y: torch.ops.aten._softmax_backward_data(dy, y, -1, torch.bfloat16), dynamic=False)
    g = torch.Generator(device="cuda").manual_seed(0)
    y = torch.softmax(torch.randn(m, n, device="cuda", generator=g), -1).to(torch.bfloat16)
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    ref = y.double() * (dy.double() - (dy.double() * y.double()).sum(-1, keepdim=True))
    fns = {"ours": lambda: _bwd_impl(dy, y), "compile": lambda: compiled(dy, y)}
    err = {k: (f().double() - ref).abs().max().item() for k, f in fns.items()}
    from torch._inductor.codecache import PyCodeCache
    configs = []
    for module in list(PyCodeCache.modules):
        for name, value in vars(module).items():
            if name.startswith("triton_") and hasattr(value, "launchers"):
                configs += [f"{name}: {launcher.config}" for launcher in value.launchers]
    times = {k: [] for k in fns}
    for _ in range(7):
        for k, f in fns.items():
            times[k].append(timer.device_us(f))
    row = {"shape": [m, n], "us": {k: statistics.median(v) for k, v in times.items()}, "max_err": err, "inductor_configs": configs}
    print(json.dumps(row), flush=True)
    rows.append(row)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "inductor_softmax_bwd.json"), "w"), indent=1)
