"""Per-kernel CUDA times (torch.profiler) of the D128 attention backward through the public API
(the shipped table) and of SDPA's cuDNN backend, bf16: where ours spends its time beside cuDNN's.
By default B4 H32 at S4096 and S8192, causal and not; or the shapes given as B,H,Hkv,S,D,causal.

    python3 scratch/bwd_kernel_split_h200.py [1,32,8,16384,128,1 ...]   (on a GPU)
"""
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helion_kernels as hk  # noqa: E402
from benchmarks.impls import _sdpa_backend  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bwd_variant_kernel_split import kernel_times  # noqa: E402


def kernel_times_by_name(fn) -> dict:
    """{kernel name: µs} of one call of `fn`, slowest first (kernel_times summed by name)."""
    times = defaultdict(float)
    for name, us in kernel_times(fn):
        times[name] += us
    return {name: round(us, 1) for name, us in sorted(times.items(), key=lambda kv: -kv[1])}


def main() -> None:
    cudnn = _sdpa_backend("cudnn")
    shapes = [tuple(int(x) for x in arg.split(",")) for arg in sys.argv[1:]] or \
        [(4, 32, 32, s, 128, causal) for s in (4096, 8192) for causal in (0, 1)]
    for b, h, hkv, s, d, causal in shapes:
        gen = torch.Generator(device="cuda").manual_seed(s)
        q, grad = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
        k, v = (torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        outs = (("ours", hk.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=hkv != h)),
                ("cudnn", cudnn(q, k, v, bool(causal))))
        for name, out in outs:
            times = kernel_times_by_name(lambda o=out: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True))
            print(f"B{b} H{h} Hkv{hkv} S{s} D{d} causal={bool(causal)} {name}: total {sum(times.values()):.1f} us: {times}",
                  flush=True)


if __name__ == "__main__":
    main()
