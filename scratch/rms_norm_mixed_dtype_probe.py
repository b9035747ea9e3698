"""RMSNorm of bf16 rows beside float32: (A) autocast's float32 rms_norm (what PyTorch's CUDA autocast
asks where its dispatcher lists aten::rms_norm, as torch 2.13 does; torch 2.11 does not, so the probe
sets helion_kernels' autocast table as the newer PyTorch reads): with a float32 weight, our one
kernel (bf16 rows read as they are, float32 written) against the cast-then-float32-kernel path it
replaces, and PyTorch's rms_norm of float32 casts (what its autocast runs), eager and compiled;
(B) bf16 rows with a float32 weight, output bf16 (outside autocast, or inside it on torch 2.11):
our one kernel against PyTorch (whose fused kernel refuses mixed dtypes) and torch.compile. Forward
and forward+backward; device time (CUDA events, L2 flushed, alternating rounds, medians) and GB/s
over bytes read + written once. Shapes: MxN arguments, else SHAPES. Writes
$OUT/rms_norm_mixed_dtypes.json. (Run 2026-12-06 03:00 UTC on torch 2.11 without the table
setting, its case A measured case B's path.)"""
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import helion_kernels as hk
from benchmarks.timing import Timer

SHAPES = [(16384, 1024), (16384, 4096), (16384, 8192), (2048, 16384), (65536, 4096), (64, 4096)]
BF16 = torch.bfloat16


def autocast(fn):
    def run(*args):
        with torch.autocast("cuda", BF16):
            return fn(*args)
    return run


def _compiled(fn):
    """A fresh static-shape torch.compile of `fn`, as the report's peer (benchmarks/impls.py)."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def main():
    dev = torch.device("cuda")
    hk._autocast._AUTOCASTS[("rms_norm", "cuda")] = True  # autocast's policy for rms_norm: float32
    timer = Timer(dev)
    torch_rms = lambda x, w: F.rms_norm(x, (x.shape[-1],), w)
    ours = lambda x, w: hk.rms_norm(x, (x.shape[-1],), w)
    float32_rms = lambda x, w: F.rms_norm(x.float(), (x.shape[-1],), w.float(), torch.finfo(torch.float32).eps)
    eager_a, ours_a = autocast(float32_rms), autocast(ours)
    results = {"device": torch.cuda.get_device_name(), "shapes": {}}
    shapes = [tuple(int(size) for size in arg.split("x")) for arg in sys.argv[1:]] or SHAPES
    for m, n in shapes:
        x = torch.randn(m, n, device=dev, dtype=BF16)
        # per shape and static, as the report's peer: one default-mode compile reused across shapes
        # recompiles with dynamic shapes after the first (slower kernels: the runs of 12-06 02:58 and
        # 04:5x UTC read torch.compile so past their first shape)
        compiled_a, compiled_b = _compiled(autocast(float32_rms)), _compiled(torch_rms)
        w = torch.randn(n, device=dev) * 0.5 + 1
        xg, wg = x.detach().requires_grad_(), w.detach().requires_grad_()
        grad = lambda out, g: torch.autograd.grad(out, (xg, wg), g)  # no accumulation into .grad
        ref = F.rms_norm(x.double(), (n,), w.double(), eps=torch.finfo(torch.float32).eps)
        g32, g16 = torch.randn(m, n, device=dev), torch.randn(m, n, device=dev, dtype=BF16)
        with torch.autocast("cuda", BF16):
            explain_a = str(hk.explain(hk.rms_norm, xg, (n,), wg))
        row = {"A autocast": {"max_abs_err_vs_fp64": (ours_a(x, w).double() - ref).abs().max().item(),
                              "out_dtype": str(ours_a(x, w).dtype), "explain": explain_a},
               "B float32 weight": {"max_abs_err_vs_fp64": (ours(x, w).double() - ref).abs().max().item(),
                                    "out_dtype": str(ours(x, w).dtype),
                                    "explain": str(hk.explain(hk.rms_norm, xg, (n,), wg))}}
        cases = {
            "A autocast": ({"one kernel": lambda: ours_a(x, w), "cast + fp32 kernel": lambda: ours(x.float(), w),
                            "eager": lambda: eager_a(x, w), "compile": lambda: compiled_a(x, w)},
                           {"one kernel": lambda: grad(ours_a(xg, wg), g32),
                            "cast + fp32 kernel": lambda: grad(ours(xg.float(), wg), g32),
                            "eager": lambda: grad(eager_a(xg, wg), g32),
                            "compile": lambda: grad(compiled_a(xg, wg), g32)},
                           m * n * (2 + 4), m * n * (2 + 4 + 4 + 2 + 2)),
            "B float32 weight": ({"one kernel": lambda: ours(x, w), "eager": lambda: torch_rms(x, w),
                                  "compile": lambda: compiled_b(x, w)},
                                 {"one kernel": lambda: grad(ours(xg, wg), g16),
                                  "eager": lambda: grad(torch_rms(xg, wg), g16),
                                  "compile": lambda: grad(compiled_b(xg, wg), g16)},
                                 m * n * (2 + 2), m * n * (2 + 2 + 2 + 2 + 2)),
        }
        for case, (fwd, both, fwd_bytes, both_bytes) in cases.items():
            for label, fns, moved in (("fwd", fwd, fwd_bytes), ("fwd+bwd", both, both_bytes)):
                try:
                    rounds = timer.device_rounds(fns, rounds=5)
                except Exception as error:  # one failing peer (a compile) must not lose the rest
                    print(m, n, case, label, "failed:", repr(error)[:300], flush=True)
                    continue
                us = {name: statistics.median(v) for name, v in rounds.items()}
                row[case][label] = {name: {"us": round(t, 2), "GB/s": round(moved / t / 1e3, 1),
                                           "speedup_of_one_kernel": round(t / us["one kernel"], 3)}
                                    for name, t in us.items()}
                print(m, n, case, label, json.dumps({k: v["us"] for k, v in row[case][label].items()}), flush=True)
        results["shapes"][f"{m}x{n}"] = row
        with open(os.path.join(os.environ.get("OUT", "."), "rms_norm_mixed_dtypes.json"), "w") as f:
            json.dump(results, f, indent=1)  # after each shape: a time limit keeps the shapes done


if __name__ == "__main__":
    main()
