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
    return softmax(input, dim, dtype=dtype)


REPLACEMENTS = {
    "rms_norm": rms_norm,
    "softmax": _patched_softmax,
    "linear": linear,
    "scaled_dot_product_attention": scaled_dot_product_attention,
}


class Patch:
    """Handle returned by `patch()`; leaving its `with` block restores the functions that were in
    place when it was made (so an inner `with patch()` leaves an outer one's patch in place)."""

    def __init__(self, before: dict):
        self._before = before

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name, function in self._before.items():
            setattr(F, name, function)
        return False


def patch() -> Patch:
    """Replace torch.nn.functional.{rms_norm, softmax, linear, scaled_dot_product_attention}."""
    before = {name: getattr(F, name) for name in REPLACEMENTS}
    for name, function in REPLACEMENTS.items():
        setattr(F, name, function)
    return Patch(before)


def unpatch() -> None:
    """Restore PyTorch's own functions."""
    for name in REPLACEMENTS:
        setattr(F, name, ORIGINAL[name])


def is_patched() -> bool:
    return all(getattr(F, name) is function for name, function in REPLACEMENTS.items())
