"""softmax(x, dtype=torch.float32) on bf16 rows (autocast's softmax on CUDA): the one-kernel path
(the tuned bf16 config compiled for float32 output) against the cast-then-float32-kernel path it
replaces, eager PyTorch and torch.compile, forward and forward+backward; device time (CUDA events,
L2 flushed, alternating rounds, medians) and GB/s over bytes read + written once (bf16 in, fp32 out;
backward fp32 y and dy in, bf16 dx out). Writes $OUT/softmax_float32_output.json."""
import json
import os
import statistics

import torch

import helion_kernels as hk
from benchmarks.timing import Timer

SHAPES = [(16384, 1024), (16384, 4096), (4096, 16384), (2048, 32000), (16384, 8192), (1, 32000), (64, 4096)]


def _compiled(fn):
    """A fresh static-shape torch.compile of `fn`, as the report's peer (benchmarks/impls.py)."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def main():
    dev = torch.device("cuda")
    timer = Timer(dev)
    eager = lambda x: torch.softmax(x, -1, dtype=torch.float32)
    results = {"device": torch.cuda.get_device_name(), "shapes": {}}
    for m, n in SHAPES:
        x = torch.randn(m, n, device=dev, dtype=torch.bfloat16) * 3
        compiled = _compiled(eager)  # per shape: one default-mode compile across shapes turns dynamic
        ref = torch.softmax(x.double(), -1)
        out = hk.softmax(x, -1, dtype=torch.float32)
        err = (out.double() - ref).abs().max().item()
        xg = x.detach().requires_grad_()
        g = torch.randn(m, n, device=dev, dtype=torch.float32)
        fwd = {"one kernel": lambda: hk.softmax(x, -1, dtype=torch.float32),
               "cast + fp32 kernel": lambda: hk.softmax(x.float(), -1),
               "eager": lambda: eager(x), "compile": lambda: compiled(x)}
        both = {"one kernel": lambda: hk.softmax(xg, -1, dtype=torch.float32).backward(g),
                "cast + fp32 kernel": lambda: hk.softmax(xg.float(), -1).backward(g),
                "eager": lambda: eager(xg).backward(g)}
        row = {"max_abs_err_vs_fp64": err, "explain": str(hk.explain(hk.softmax, xg, -1, dtype=torch.float32))}
        for label, fns in (("fwd", fwd), ("fwd+bwd", both)):
            rounds = timer.device_rounds(fns, rounds=5)
            us = {name: statistics.median(v) for name, v in rounds.items()}
            moved = m * n * (2 + 4) if label == "fwd" else m * n * (2 + 4 + 4 + 4 + 2)
            row[label] = {name: {"us": round(t, 2), "GB/s": round(moved / t / 1e3, 1),
                                 "speedup_of_one_kernel": round(t / us["one kernel"], 3)} for name, t in us.items()}
        results["shapes"][f"{m}x{n}"] = row
        print(m, n, json.dumps({k: {n2: v["us"] for n2, v in row[k].items()} for k in ("fwd", "fwd+bwd")}), flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "softmax_float32_output.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
