"""The implementations compared per op: ours through the public API, and each peer's forward.

`forward(family, impl)` returns a function of the op's input tensors. Peers that are not
installed raise `NotInstalled`; everything else that fails raises, and the runner records it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

import helion_kernels as hk

EPS = 1e-6
FLOAT32_OUTPUT = "out_dtype=float32"

IMPLS = {
    "rmsnorm": ("ours", "eager", "compile", "liger"),
    "softmax": ("ours", "eager", "compile", "liger"),
    "matmul": ("ours", "cublas", "compile-max-autotune"),
    "attention": ("ours", "cudnn", "flash", "efficient"),
}


class NotInstalled(Exception):
    """A peer library is missing on this machine."""


def _eager_rmsnorm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def _eager_softmax(x):
    return torch.softmax(x, dim=-1)


def _eager_float32_softmax(x):
    return torch.softmax(x, dim=-1, dtype=torch.float32)


def _liger(family: str):
    try:
        if family == "rmsnorm":
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction
            return lambda x, w: LigerRMSNormFunction.apply(x, w, EPS)
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
        return LigerSoftmaxFunction.apply
    except ImportError as error:
        raise NotInstalled(f"not installed ({error})") from error


def _compiled(fn, **options):
    """A fresh torch.compile of `fn` (dynamo state reset, so no recompile limit or dynamic shapes)."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False, **options)


def _gqa(q, k) -> bool:
    return q.shape[1] != k.shape[1]


def _sdpa_backend(name: str):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "efficient": SDPBackend.EFFICIENT_ATTENTION}[name]

    def run(q, k, v, causal):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=_gqa(q, k))
    return run


def _ours(family: str, dtypes: str):
    return {
        "rmsnorm": lambda x, w: hk.rmsnorm(x, w, EPS),
        "softmax": (lambda x: hk.softmax(x, -1, dtype=torch.float32)) if dtypes == FLOAT32_OUTPUT
        else (lambda x: hk.softmax(x, -1)),
        "matmul": hk.matmul,
        "attention": lambda q, k, v, causal: hk.scaled_dot_product_attention(
            q, k, v, is_causal=causal, enable_gqa=_gqa(q, k)),
    }[family]


def forward(family: str, impl: str, dtypes: str = ""):
    """The forward function of `impl` for an op family and a row's other argument dtypes (plan.Row);
    its arguments are the family's inputs."""
    if impl == "ours":
        return _ours(family, dtypes)
    if impl == "liger":
        return _liger(family)
    if family in ("rmsnorm", "softmax"):
        eager = _eager_rmsnorm if family == "rmsnorm" else (
            _eager_float32_softmax if dtypes == FLOAT32_OUTPUT else _eager_softmax)
        return eager if impl == "eager" else _compiled(eager)
    if family == "matmul":
        return torch.matmul if impl == "cublas" else _compiled(torch.matmul, mode="max-autotune-no-cudagraphs")
    return _sdpa_backend(impl)


def explain_ours(family: str, args, dtypes: str = "") -> str:
    """One line saying whether our call runs a generated kernel (and which) or PyTorch's fallback."""
    fn = {"rmsnorm": hk.rmsnorm, "softmax": hk.softmax, "matmul": hk.matmul,
          "attention": hk.scaled_dot_product_attention}[family]
    if family == "rmsnorm":
        explanation = hk.explain(fn, args[0], args[1], EPS)
    elif family == "softmax":
        explanation = hk.explain(fn, args[0], -1, dtype=torch.float32 if dtypes == FLOAT32_OUTPUT else None)
    elif family == "attention":
        explanation = hk.explain(fn, *args[:3], is_causal=args[3], enable_gqa=_gqa(*args[:2]))
    else:
        explanation = hk.explain(fn, *args)
    if not explanation.uses_kernels:
        return "PyTorch fallback: " + str(explanation).replace("\n", " ")[:200]
    return "; ".join(f"{d.op}__{d.variant} ({d.reason})" for d in explanation.forward + explanation.backward)
