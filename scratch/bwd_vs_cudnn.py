"""The attention backward through the public function (helion_kernels.scaled_dot_product_attention's
autograd, the shipped table) against SDPA's cuDNN backend at the report's D128 backward shapes, bf16:
benchmarks.timing.Timer (L2 flushed, alternating rounds), µs of the gradient call alone.

    python3 scratch/bwd_vs_cudnn.py   (on a GPU)
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helion_kernels as hk  # noqa: E402
from benchmarks.impls import _sdpa_backend  # noqa: E402
from benchmarks.timing import Timer  # noqa: E402

SHAPES = [(4, 32, 32, s, c) for c in (False, True) for s in (1024, 2048, 4096, 8192)] + \
    [(1, 32, 8, 16384, True), (8, 32, 8, 1024, True)]


def main() -> None:
    timer = Timer(torch.device("cuda"))
    cudnn = _sdpa_backend("cudnn")
    for b, h, hkv, s, causal in SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(s)
        q = torch.randn(b, h, s, 128, device="cuda", dtype=torch.bfloat16, generator=gen).requires_grad_()
        k = torch.randn(b, hkv, s, 128, device="cuda", dtype=torch.bfloat16, generator=gen).requires_grad_()
        v = torch.randn(b, hkv, s, 128, device="cuda", dtype=torch.bfloat16, generator=gen).requires_grad_()
        grad = torch.randn(b, h, s, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
        outs = {"ours": hk.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hkv != h),
                "cudnn": cudnn(q, k, v, causal)}
        fns = {name: (lambda o=o: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True)) for name, o in outs.items()}
        diff = max(float((a.float() - c.float()).abs().max()) for a, c in zip(fns["ours"](), fns["cudnn"]()))
        times = {name: statistics.median(runs) for name, runs in timer.device_rounds(fns).items()}
        print(f"B{b} H{h} Hkv{hkv} S{s} causal={causal}: ours {times['ours']:.1f} us, cudnn {times['cudnn']:.1f} us, "
              f"ours/cudnn speed {times['cudnn'] / times['ours']:.3f}x, max |diff| {diff:.3g}", flush=True)


if __name__ == "__main__":
    main()
