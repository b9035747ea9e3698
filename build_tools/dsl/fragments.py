"""Tunable fragments for `hl.register_tunable`: the legal values of a user-declared config knob."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PowerOfTwoFragment:
    low: int
    high: int
    default_val: int | None = None

    def choices(self) -> list[int]:
        out, v = [], 1
        while v <= self.high:
            if v >= self.low:
                out.append(v)
            v *= 2
        return out

    def default(self) -> int:
        return self.default_val if self.default_val is not None else self.choices()[0]


@dataclass(frozen=True)
class IntegerFragment:
    low: int
    high: int
    default_val: int | None = None

    def choices(self) -> list[int]:
        return list(range(self.low, self.high + 1))

    def default(self) -> int:
        return self.default_val if self.default_val is not None else self.low


@dataclass(frozen=True)
class EnumFragment:
    choices_: tuple

    def __init__(self, choices: Any):
        object.__setattr__(self, "choices_", tuple(choices))

    def choices(self) -> list:
        return list(self.choices_)

    def default(self) -> Any:
        return self.choices_[0]


@dataclass(frozen=True)
class BooleanFragment:
    def choices(self) -> list[bool]:
        return [False, True]

    def default(self) -> bool:
        return False
