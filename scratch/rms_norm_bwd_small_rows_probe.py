"""The bf16 RMSNorm backward at small row counts of 4096 columns (2-1,024 rows: until 2026-12-06 the
H100 ran PyTorch's backward there, its tuned config not launching past one row), ours against
torch.compile (one static compile per shape, as the report's peer) and eager: autograd.grad of a
forward run once outside the timing (CUDA events, L2 flushed, 5 alternating rounds, medians), and
whether our path ran a kernel (`hk.explain` of the backward's decision). Shapes: M arguments
(default 2 8 64 256 512 1024). Writes $OUT/rms_norm_bwd_small_rows.json."""
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import helion_kernels as hk
from benchmarks.timing import Timer

N, BF16 = 4096, torch.bfloat16


def main():
    timer = Timer(torch.device("cuda"))
    rows = [int(arg) for arg in sys.argv[1:]] or [2, 8, 64, 256, 512, 1024]
    results = {"device": torch.cuda.get_device_name(), "rows": {}}
    for m in rows:
        torch._dynamo.reset()
        compiled = torch.compile(lambda x, w: F.rms_norm(x, (N,), w), dynamic=False)
        x = torch.randn(m, N, device="cuda", dtype=BF16).requires_grad_()
        w = (torch.randn(N, device="cuda", dtype=BF16) * 0.5 + 1).requires_grad_()
        g = torch.randn(m, N, device="cuda", dtype=BF16)
        outs = {"ours": hk.rms_norm(x, (N,), w), "compile": compiled(x, w), "eager": F.rms_norm(x, (N,), w)}
        fns = {name: (lambda out: lambda: torch.autograd.grad(out, (x, w), g, retain_graph=True))(out)
               for name, out in outs.items()}
        reference = torch.autograd.grad(F.rms_norm(x.double(), (N,), w.double()), (x, w), g.double())
        ours = fns["ours"]()
        errors = [((a.double() - b).abs().max() / b.abs().max()).item() for a, b in zip(ours, reference)]
        us = {name: statistics.median(t) for name, t in timer.device_rounds(fns, rounds=5).items()}
        row = {"us": {k: round(v, 2) for k, v in us.items()}, "relative_max_error_dx_dw": errors,
               "explain": str(hk.explain(hk.rms_norm, x, (N,), w)).splitlines()[-2:]}
        results["rows"][m] = row
        print(m, json.dumps(row["us"]), f"ours/compile {us['compile'] / us['ours']:.2f}x", row["explain"][0][:90], flush=True)
        with open(os.path.join(os.environ.get("OUT", "."), "rms_norm_bwd_small_rows.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
