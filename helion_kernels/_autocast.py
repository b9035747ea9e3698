"""torch.autocast for the public functions: the casts PyTorch's autocast applies to the op each
function replaces, applied before the function runs.

Autocast acts in the dispatcher, on ATen ops; our custom ops have no autocast kernel and the direct
paths skip the dispatcher, so without this an `F.linear` patched to ours would compute in float32
inside `torch.autocast("cuda", torch.bfloat16)` where PyTorch's computes in bfloat16. Each public
function begins with `if enabled() and applies(NAME, tensor)`, one C call when no autocast region
is open, and then runs again through `call`: its tensors cast by PyTorch's policy for the op, the
autocast of their device type switched off. The policies are PyTorch's (aten/src/ATen/
autocast_mode.cpp): the products run in the autocast dtype (`lower_precision_fp`), rms_norm in
float32 (`fp32`) and softmax with dtype float32 unless one is given (`fp32_set_opt_dtype`); which
op each device type autocasts is read from the dispatcher once (on CPU only the products; torch
2.11's CUDA lists no rms_norm, 2.13's does). The row ops need no cast of half rows: softmax takes
the float32 dtype, and rms_norm reads half rows as they are and writes float32 (their dtype variants).
"""
from __future__ import annotations

import torch
from torch import Tensor

enabled = torch._C._is_any_autocast_enabled

LOWER_PRECISION, FLOAT32, FLOAT32_DTYPE = "lower_precision_fp", "fp32", "fp32_set_opt_dtype"
POLICIES = {
    "linear": ("aten::linear", LOWER_PRECISION),
    "matmul": ("aten::matmul", LOWER_PRECISION),
    "scaled_dot_product_attention": ("aten::scaled_dot_product_attention", LOWER_PRECISION),
    "rms_norm": ("aten::rms_norm", FLOAT32),
    "softmax": ("aten::softmax.int", FLOAT32_DTYPE),
}
_DISPATCH_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}
_AUTOCASTS = {(name, device): torch._C._dispatch_has_kernel_for_dispatch_key(op, key)
              for name, (op, _policy) in POLICIES.items() for device, key in _DISPATCH_KEYS.items()}


def applies(name: str, tensor) -> bool:
    """Whether an open autocast region casts the arguments of `name`'s op on `tensor`'s device."""
    if not isinstance(tensor, Tensor):
        return False
    device = tensor.device.type
    return _AUTOCASTS.get((name, device), False) and torch.is_autocast_enabled(device)


def eligible(t, device: str) -> bool:
    """Whether autocast casts `t`: a floating-point tensor, not float64, on its device type."""
    return isinstance(t, Tensor) and t.is_floating_point() and t.dtype is not torch.float64 and t.device.type == device


def call(fn, name: str, *args, **kwargs):
    """`fn(*args, **kwargs)` with the tensors cast as autocast casts those of `name`'s op (not for
    `fp32_set_opt_dtype`, which the function applies to its dtype itself) and autocast off for their
    device type (the casts are done, and `fn`'s own check must not apply them again)."""
    return _with(lambda a, target: a.to(target), fn, name, *args, **kwargs)


def described(explain, name: str, *args, **kwargs):
    """`explain(*args, **kwargs)` as `call` would run it, on stand-ins of the cast tensors: empty
    tensors of the same shapes and strides in the cast dtype (no copy), requiring grad as theirs."""
    def stand_in(a, target):
        if a.dtype == target:
            return a
        return torch.empty_strided(a.shape, a.stride(), dtype=target, device=a.device).requires_grad_(a.requires_grad)
    return _with(stand_in, explain, name, *args, **kwargs)


def _with(cast, fn, name: str, *args, **kwargs):
    device = next(a for a in args if isinstance(a, Tensor)).device.type
    target = torch.get_autocast_dtype(device) if POLICIES[name][1] == LOWER_PRECISION else torch.float32
    args = tuple(cast(a, target) if eligible(a, device) else a for a in args)
    kwargs = {key: cast(a, target) if eligible(a, device) else a for key, a in kwargs.items()}
    with torch.autocast(device, enabled=False):
        return fn(*args, **kwargs)
