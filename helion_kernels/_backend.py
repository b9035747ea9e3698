"""Shared routing facts: where kernels may run, which dtypes they take, and PyTorch's originals.

The originals of the torch.nn.functional functions are captured at import, before `patch()` can
replace them, so every PyTorch fallback calls PyTorch itself and never recurses into us.
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F

HALF_DTYPES = (torch.float16, torch.bfloat16)  # read as they are beside float32 (the row ops' dtype variants)
KERNEL_DTYPES = (*HALF_DTYPES, torch.float32)

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DISABLED = os.environ.get("HK_DISABLE") == "1"

ORIGINAL = {
    "rms_norm": F.rms_norm,
    "softmax": F.softmax,
    "linear": F.linear,
    "scaled_dot_product_attention": F.scaled_dot_product_attention,
    "matmul": torch.matmul,
}


_DEVICE_REASONS = {}
_UNKNOWN = object()


def device_reason(device: torch.device, dtype: torch.dtype | None = None, uses_dot: bool = False) -> str | None:
    """Why kernels cannot run on `device` (for `dtype`, in a kernel using tl.dot), or None when they can.
    Memoized: it runs on every call."""
    reason = _DEVICE_REASONS.get(device, _UNKNOWN)  # one hash of the device: it runs on every call
    if reason is _UNKNOWN:
        reason = _DEVICE_REASONS[device] = _device_reason(device)
    if reason is None and uses_dot and dtype is torch.float32 and device.type == "cuda" \
            and not torch.backends.cuda.matmul.allow_tf32:
        return ("float32 products: the kernels' tl.dot uses TF32, which PyTorch's "
                "torch.backends.cuda.matmul.allow_tf32 currently disallows")
    return reason


def _device_reason(device: torch.device) -> str | None:
    if DISABLED:
        return "disabled by HK_DISABLE=1"
    if device.type == "cuda" or (device.type == "cpu" and INTERPRET):
        return None
    if device.type == "cpu":
        return "CPU tensor: the generated Triton runs on CPU only under TRITON_INTERPRET=1"
    return f"{device.type} tensor: kernels run on CUDA/ROCm devices"


def transform_reason() -> str | None:
    """Why a call under a torch.func transform (grad, vmap, jvp, ...) runs PyTorch's implementation:
    custom ops with registered autograd do not support them."""
    if torch._C._are_functorch_transforms_active():
        return "a torch.func transform is active (the custom ops do not support them)"
    return None


def dtype_reason(dtype: torch.dtype) -> str | None:
    if dtype in KERNEL_DTYPES:
        return None
    return f"dtype {str(dtype).removeprefix('torch.')} is not supported by the kernels " \
           f"(supported: float16, bfloat16, float32)"


def needs_autograd(*tensors) -> bool:
    """True when the call must record autograd (or is being traced), so it goes through torch.library."""
    if torch.compiler.is_compiling():
        return True
    if not torch.is_grad_enabled():
        return False
    return any(t is not None and t.requires_grad for t in tensors)
