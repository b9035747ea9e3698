"""A Helion-style kernel language compiled to standalone Triton (`import build_tools.dsl as helion`)."""
from __future__ import annotations

import torch
import triton

from . import exc, language
from .config import Config
from .fragments import BooleanFragment, EnumFragment, IntegerFragment, PowerOfTwoFragment
from .kernel import BoundKernel, Kernel, kernel


def cdiv(a: int, b: int) -> int:
    return triton.cdiv(a, b)


def next_power_of_2(n: int) -> int:
    return triton.next_power_of_2(n)


def counters(count: int, device: torch.device) -> torch.Tensor:
    """`count` int32 zeros for one launch's cross-program counters (`hl.atomic_add` tickets, signal
    pads). The kernel must leave every entry at 0 when it ends: the generated launcher then reuses
    one buffer per device and stream (`_counters`) instead of filling a fresh one on every call."""
    return torch.zeros(count, dtype=torch.int32, device=device)


__all__ = [
    "BooleanFragment",
    "BoundKernel",
    "Config",
    "EnumFragment",
    "IntegerFragment",
    "Kernel",
    "PowerOfTwoFragment",
    "cdiv",
    "counters",
    "exc",
    "kernel",
    "language",
    "next_power_of_2",
]
