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


CHUNK = 1 << 24  # elements compared at a time, so huge outputs need little extra memory


def _chunk_mismatch(a, e, rtol: float, atol: float) -> tuple[int, float]:
    """(number of elements off, max abs error) of two flat float64 chunks."""
    both_nan = torch.isnan(a) & torch.isnan(e)
    error = (a - e).abs()
    bad = (error > atol + rtol * e.abs()) | (torch.isnan(a) != torch.isnan(e))
    bad |= torch.isinf(a) & (a != e)
    bad &= ~both_nan
    finite_error = torch.nan_to_num(error.masked_fill(both_nan, 0.0), nan=float("inf"))
    return int(bad.sum()), float(finite_error.max())


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
        a = torch.as_tensor(a).detach().to(e.device)
        if a.shape != e.shape:
            return f"{path}: shape {tuple(a.shape)}, expected {tuple(e.shape)}"
        a, e = a.reshape(-1), e.reshape(-1)
        off, worst = 0, 0.0
        for start in range(0, a.numel(), CHUNK):
            n, m = _chunk_mismatch(
                a[start:start + CHUNK].to(torch.float64), e[start:start + CHUNK].to(torch.float64), rtol, atol
            )
            off, worst = off + n, max(worst, m)
        if off:
            return (
                f"{path}: {off}/{a.numel()} elements off, max abs error {worst:.3g} "
                f"(rtol={rtol}, atol={atol})"
            )
    return None
