"""A Helion-style kernel language compiled to standalone Triton (`import build_tools.dsl as helion`)."""
from __future__ import annotations

import triton

from . import exc, language
from .config import Config
from .fragments import BooleanFragment, EnumFragment, IntegerFragment, PowerOfTwoFragment
from .kernel import BoundKernel, Kernel, kernel


def cdiv(a: int, b: int) -> int:
    return triton.cdiv(a, b)


def next_power_of_2(n: int) -> int:
    return triton.next_power_of_2(n)


__all__ = [
    "BooleanFragment",
    "BoundKernel",
    "Config",
    "EnumFragment",
    "IntegerFragment",
    "Kernel",
    "PowerOfTwoFragment",
    "cdiv",
    "exc",
    "kernel",
    "language",
    "next_power_of_2",
]
