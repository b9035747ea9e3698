"""Where the host time of an autograd backward through our API goes (GPU only): times the generated
launcher, the backward custom op and `torch.autograd.grad` over `hk.rmsnorm` (host loop and CUDA
events), and prints a profiler table of the autograd call. Usage: python tools/bwd_host_probe.py M N"""
from __future__ import annotations

import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

import helion_kernels as hk
from helion_kernels import _eager
from helion_kernels._dispatch import DISPATCHER
from helion_kernels._ops import rms_norm as ops


def host_us(fn, calls=300, rounds=5):
    for _ in range(10):
        fn()
    results = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        results.append((time.perf_counter() - start) * 1e6 / calls)
    return statistics.median(results)


class _Identity(torch.autograd.Function):
    """The floor: an autograd.Function whose backward is one Python return."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class _LauncherFunction(torch.autograd.Function):
    """RMSNorm as a plain autograd.Function over the same generated launchers (no torch.library)."""

    @staticmethod
    def forward(ctx, x, weight, fwd, bwd):
        out, inv_rms = fwd(x, weight, 1e-6, x.dtype)
        ctx.save_for_backward(x, weight, inv_rms)
        ctx.bwd = bwd
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight, inv_rms = ctx.saved_tensors
        dx, dw = ctx.bwd(grad, x, weight, inv_rms)
        return dx, dw, None, None


class _TwoOutputFunction(torch.autograd.Function):
    """As _LauncherFunction, with our op's outputs: (out, inv_rms), inv_rms non-differentiable and
    unmaterialized grads (what _ops.rms_norm's setup_context does)."""

    @staticmethod
    def forward(ctx, x, weight, fwd, bwd):
        out, inv_rms = fwd(x, weight, 1e-6, x.dtype)
        ctx.save_for_backward(x, weight, inv_rms)
        ctx.mark_non_differentiable(inv_rms)
        ctx.set_materialize_grads(False)
        ctx.bwd = bwd
        return out, inv_rms

    @staticmethod
    def backward(ctx, grad, _grad_inv_rms):
        x, weight, inv_rms = ctx.saved_tensors
        dx, dw = ctx.bwd(grad, x, weight, inv_rms)
        return dx, dw, None, None


def main(m: int, n: int):
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    out = hk.rmsnorm(x, w)
    _, inv_rms = ops.rms_norm_fwd(x.detach(), w.detach(), 1e-6, x.dtype)
    launcher = DISPATCHER.select("rms_norm_bwd", x.device, x.dtype, ("M", "N"), (m, n)).launcher
    eager_out = torch.nn.functional.rms_norm(x, (n,), w)
    forward = DISPATCHER.select("rms_norm_fwd", x.device, x.dtype, ("M", "N"), (m, n)).launcher
    fn_out = _LauncherFunction.apply(x, w, forward, launcher)
    identity_out = _Identity.apply(x)
    two_out = _TwoOutputFunction.apply(x, w, forward, launcher)[0]
    function_out = ops._RmsNormFunction.apply(x, w, 1e-6, x.dtype)[0]
    xd, wd = x.detach(), w.detach()
    cases = {
        "launcher": lambda: launcher(g, x.detach(), w.detach(), inv_rms),
        "custom op rms_norm_bwd": lambda: ops.rms_norm_bwd(g, x.detach(), w.detach(), inv_rms),
        "autograd.grad(hk.rmsnorm)": lambda: torch.autograd.grad(out, (x, w), g, retain_graph=True),
        "autograd.grad(eager)": lambda: torch.autograd.grad(eager_out, (x, w), g, retain_graph=True),
        "autograd.grad(Function)": lambda: torch.autograd.grad(fn_out, (x, w), g, retain_graph=True),
        "autograd.grad(2-output Function)": lambda: torch.autograd.grad(two_out, (x, w), g, retain_graph=True),
        "autograd.grad(_RmsNormFunction)": lambda: torch.autograd.grad(function_out, (x, w), g, retain_graph=True),
        "_eager.call(bwd op)": lambda: _eager.call(ops.rms_norm_bwd, ops._bwd_impl, g, xd, wd, inv_rms),
        "_bwd_impl": lambda: ops._bwd_impl(g, xd, wd, inv_rms),
        "_backward (launch)": lambda: ops._backward(g, xd, wd, inv_rms),
        "autograd.grad(identity)": lambda: torch.autograd.grad(identity_out, (x,), g, retain_graph=True),
        "empty_like+zeros(m)": lambda: (torch.empty_like(x), torch.zeros(m, device="cuda")),
    }
    print(f"== {m}x{n} bf16 host µs per call (loop of back-to-back calls ended by a sync)")
    for name, fn in cases.items():
        print(f"  {name:34s} {host_us(fn):8.1f}")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            torch.autograd.grad(out, (x, w), g, retain_graph=True)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=50))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
