"""The kernels RMSNorm forward + backward launches, ours against torch.compile's (static, one compile
per shape, as the report's peer), with bf16 rows and a float32 weight (B) and under autocast's
dtypes (A, helion_kernels' autocast table set as torch 2.13 reads it): torch.profiler over 50
iterations, each kernel's name, launches per iteration and mean device µs. For the small shapes
where the mixed-dtype fwd+bwd trails torch.compile (64x4096: 14.2-14.4 against 11.8-12.2 µs on
the H100, 2026-12-06). Shapes: MxN arguments (default 64x4096). Writes $OUT/rms_norm_launches.json."""
import collections
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import helion_kernels as hk

BF16, ITERATIONS = torch.bfloat16, 50


def autocast(fn):
    def run(*args):
        with torch.autocast("cuda", BF16):
            return fn(*args)
    return run


def kernels(step) -> dict:
    """{kernel name: (launches per iteration, mean µs a launch)} of `ITERATIONS` calls of `step`."""
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERATIONS):
            step()
        torch.cuda.synchronize()
    totals, counts = collections.defaultdict(float), collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] += event.device_time
            counts[event.name] += 1
    return {name: (counts[name] / ITERATIONS, round(totals[name] / counts[name], 2)) for name in totals}


def main():
    hk._autocast._AUTOCASTS[("rms_norm", "cuda")] = True  # autocast's policy for rms_norm: float32
    shapes = [tuple(int(size) for size in arg.split("x")) for arg in sys.argv[1:]] or [(64, 4096)]
    ours = lambda x, w: hk.rms_norm(x, (x.shape[-1],), w)
    torch_rms = lambda x, w: F.rms_norm(x, (x.shape[-1],), w)
    float32_rms = lambda x, w: F.rms_norm(x.float(), (x.shape[-1],), w.float(), torch.finfo(torch.float32).eps)
    results = {"device": torch.cuda.get_device_name(), "shapes": {}}
    for m, n in shapes:
        torch._dynamo.reset()
        compiled_a, compiled_b = torch.compile(autocast(float32_rms), dynamic=False), torch.compile(torch_rms, dynamic=False)
        x = torch.randn(m, n, device="cuda", dtype=BF16).requires_grad_()
        w = (torch.randn(n, device="cuda") * 0.5 + 1).requires_grad_()
        g32, g16 = torch.randn(m, n, device="cuda"), torch.randn(m, n, device="cuda", dtype=BF16)
        steps = {
            "A autocast, ours": lambda: torch.autograd.grad(autocast(ours)(x, w), (x, w), g32),
            "A autocast, compile": lambda: torch.autograd.grad(compiled_a(x, w), (x, w), g32),
            "B float32 weight, ours": lambda: torch.autograd.grad(ours(x, w), (x, w), g16),
            "B float32 weight, compile": lambda: torch.autograd.grad(compiled_b(x, w), (x, w), g16),
        }
        row = {}
        for label, step in steps.items():
            row[label] = kernels(step)
            print(m, n, label, flush=True)
            for name, (launches, us) in sorted(row[label].items(), key=lambda item: -item[1][1]):
                print(f"    {launches:4.1f} x {us:8.2f} us  {name[:110]}", flush=True)
        results["shapes"][f"{m}x{n}"] = row
        with open(os.path.join(os.environ.get("OUT", "."), "rms_norm_launches.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
