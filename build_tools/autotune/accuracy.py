"""Accuracy gate: a candidate's outputs must match the op's reference within its tolerance."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


def _leaves(value, path="out"):
    """(path, leaf) pairs of a nested output made of tensors, tuples/lists, dicts and scalars."""
    if isinstance(value, torch.Tensor) or value is None or isinstance(value, (int, float, bool)):
        yield path, value
    elif isinstance(value, Mapping):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}[{key!r}]")
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        raise TypeError(f"{path}: cannot compare a {type(value).__name__}")


def mismatch(actual, expected, rtol: float, atol: float) -> str | None:
    """None when `actual` matches `expected` (|a - e| <= atol + rtol * |e|), else what differs."""
    got = list(_leaves(actual))
    want = list(_leaves(expected))
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for (path, a), (_, e) in zip(got, want):
        if e is None or a is None:
            if (a is None) != (e is None):
                return f"{path}: {type(a).__name__}, expected {type(e).__name__}"
            continue
        e = torch.as_tensor(e).detach()
        e = e.to(torch.float64)
        a = torch.as_tensor(a).detach().to(e.device, torch.float64)
        if a.shape != e.shape:
            return f"{path}: shape {tuple(a.shape)}, expected {tuple(e.shape)}"
        if a.numel() == 0:
            continue
        nan_mismatch = torch.isnan(a) != torch.isnan(e)
        error = (a - e).abs()
        bad = (error > atol + rtol * e.abs()) | nan_mismatch
        bad &= ~(torch.isnan(a) & torch.isnan(e))
        bad |= torch.isinf(a) & (a != e)
        if bool(bad.any()):
            finite = torch.nan_to_num(error, nan=float("inf"))
            return (
                f"{path}: {int(bad.sum())}/{a.numel()} elements off, max abs error "
                f"{float(finite.max()):.3g} (rtol={rtol}, atol={atol})"
            )
    return None
