"""One planned case's inputs (built once) and each implementation's callable to time: its forward, or
the autograd backward of a forward run once outside the timed region
(`torch.autograd.grad(..., retain_graph=True)`, so no gradient accumulation is timed); the runner
times them (benchmarks/runner.py)."""
from __future__ import annotations

import torch

from kernels_src import ALL_OPS

from . import impls

SPEC_NAMES = {"rmsnorm_fwd": "rms_norm_fwd", "rmsnorm_bwd": "rms_norm_bwd", "softmax_fwd": "softmax_fwd",
              "softmax_bwd": "softmax_bwd", "matmul": "matmul", "attention_fwd": "attention_fwd",
              "attention_bwd": "attention_bwd"}
COSTS = {spec.name: spec.cost for spec in ALL_OPS}


# Extra bytes an element of the mixed-dtype rows (plan.Row.dtypes) moves beyond the bf16 cost: a
# float32 output (softmax forward; its backward reads float32 y and dy: 2 + 2), or per weight
# element a float32 weight (RMSNorm: read once, and the backward writes a float32 dweight too).
EXTRA_BYTES = {("softmax_fwd", "out_dtype=float32"): (2, 0), ("softmax_bwd", "out_dtype=float32"): (4, 0),
               ("rmsnorm_fwd", "weight=float32"): (0, 2), ("rmsnorm_bwd", "weight=float32"): (0, 4)}


def cost(op: str, shape: dict, dtype: torch.dtype, dtypes: str = "") -> tuple:
    """(flops, minimum bytes moved) from the kernel source's cost model, with the mixed-dtype rows'
    wider arguments (EXTRA_BYTES: per row element, per weight element)."""
    flops, moved = COSTS[SPEC_NAMES[op]](shape, dtype)
    if dtypes:
        per_element, per_weight = EXTRA_BYTES[(op, dtypes)]
        moved += per_element * shape["M"] * shape.get("S", 1) * shape["N"] + per_weight * shape["N"]
    return flops, moved


MEMORY_BOUND = ("rmsnorm", "softmax")


def rate(row, us: float, dtype: torch.dtype) -> tuple:
    """(value, unit): GB/s for the memory-bound families, TFLOP/s for matmul and attention."""
    flops, moved = cost(row.op, row.shape, dtype, row.dtypes)
    if row.family in MEMORY_BOUND:
        return moved / us / 1e3, "GB/s"
    return flops / us / 1e6, "TFLOP/s"


def make_inputs(row, dtype: torch.dtype, device: torch.device, seed: int = 0) -> tuple:
    """The family's arguments (tensors, plus the causal flag for attention); leaves require grad for
    backward rows."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)

    def randn(*size):
        return torch.randn(*size, generator=generator, device=device, dtype=torch.float32).to(dtype)

    s = row.shape
    rows = (s["M"], s["S"]) if "S" in s else (s.get("M"),)  # a 3-D [M, S, N] input where S is given
    if row.family == "rmsnorm":
        weight = randn(s["N"])
        args = (randn(*rows, s["N"]), weight.float() if row.dtypes == "weight=float32" else weight)
    elif row.family == "softmax":
        args = (randn(*rows, s["N"]),)
    elif row.family == "matmul":
        args = (randn(s["M"], s["K"]), randn(s["K"], s["N"]))
    else:
        args = (randn(s["B"], s["H"], s["Sq"], s["D"]), randn(s["B"], s["Hkv"], s["Sk"], s["D"]),
                randn(s["B"], s["Hkv"], s["Sk"], s["D"]), s["causal"])
    if row.op.endswith("_bwd"):
        for arg in args:
            if isinstance(arg, torch.Tensor):
                arg.requires_grad_()
    return args


def timed_call(row, impl: str, args: tuple):
    """(the callable to time, its first output tensor for the accuracy check)."""
    forward = impls.forward(row.family, impl, row.dtypes)
    if not row.op.endswith("_bwd"):
        def fn():
            return forward(*args)
        return fn, fn()
    leaves = tuple(a for a in args if isinstance(a, torch.Tensor))
    out = forward(*args)
    generator = torch.Generator(device=out.device)
    generator.manual_seed(1)
    grad = torch.randn(out.shape, generator=generator, device=out.device).to(out.dtype)

    def fn():
        return torch.autograd.grad(out, leaves, grad, retain_graph=True)
    # a snapshot: an in-place backward (Liger's RMSNorm writes dx into `grad`) overwrites its output
    # on every later call, each of which reads the previous call's dx as its incoming gradient
    return fn, fn()[0].clone()
