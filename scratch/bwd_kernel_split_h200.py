"""Per-kernel CUDA times (torch.profiler) of the D128 attention backward through the public API
(the shipped table) and of SDPA's cuDNN backend, B4 H32 bf16 at S4096 and S8192, causal and not:
where ours spends its time beside cuDNN's.

    python3 scratch/bwd_kernel_split_h200.py   (on a GPU)
"""
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helion_kernels as hk  # noqa: E402
from benchmarks.impls import _sdpa_backend  # noqa: E402

REPS = 10


def kernel_times(fn) -> dict:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
    times = defaultdict(float)
    for event in prof.key_averages():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.key[:70]] += event.device_time_total / REPS
    return {k: round(v, 1) for k, v in sorted(times.items(), key=lambda kv: -kv[1]) if v > 1}


def main() -> None:
    cudnn = _sdpa_backend("cudnn")
    for s in (4096, 8192):
        for causal in (False, True):
            gen = torch.Generator(device="cuda").manual_seed(s)
            q, k, v, grad = (torch.randn(4, 32, s, 128, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(4))
            q, k, v = (t.requires_grad_() for t in (q, k, v))
            for name, out in (("ours", hk.scaled_dot_product_attention(q, k, v, is_causal=causal)), ("cudnn", cudnn(q, k, v, causal))):
                times = kernel_times(lambda o=out: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True))
                print(f"S{s} causal={causal} {name}: total {sum(times.values()):.1f} us: {times}", flush=True)


if __name__ == "__main__":
    main()
