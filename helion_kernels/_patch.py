"""`patch()`/`unpatch()`: route torch.nn.functional's functions to ours (also a context manager)."""
from __future__ import annotations

import torch.nn.functional as F

from ._backend import ORIGINAL
from ._ops.attention import scaled_dot_product_attention
from ._ops.matmul import linear
from ._ops.rms_norm import rms_norm
from ._ops.softmax import softmax


def _patched_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """F.softmax's signature; an implicit dim keeps PyTorch's legacy handling."""
    if dim is None:
        return ORIGINAL["softmax"](input, dim, _stacklevel, dtype)
    return softmax(input, dim, dtype)


REPLACEMENTS = {
    "rms_norm": rms_norm,
    "softmax": _patched_softmax,
    "linear": linear,
    "scaled_dot_product_attention": scaled_dot_product_attention,
}


class Patch:
    """Handle returned by `patch()`; leaving its `with` block calls `unpatch()`."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        unpatch()
        return False


def patch() -> Patch:
    """Replace torch.nn.functional.{rms_norm, softmax, linear, scaled_dot_product_attention}."""
    for name, function in REPLACEMENTS.items():
        setattr(F, name, function)
    return Patch()


def unpatch() -> None:
    """Restore PyTorch's own functions."""
    for name in REPLACEMENTS:
        setattr(F, name, ORIGINAL[name])


def is_patched() -> bool:
    return all(getattr(F, name) is function for name, function in REPLACEMENTS.items())
