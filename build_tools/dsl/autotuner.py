"""`helion.autotuner`'s public names that kernel sources import: the tunable fragments of
`hl.register_tunable` (the build stage's autotuner lives in build_tools/autotune)."""
from __future__ import annotations

from .fragments import BooleanFragment, EnumFragment, IntegerFragment, PowerOfTwoFragment

__all__ = ["BooleanFragment", "EnumFragment", "IntegerFragment", "PowerOfTwoFragment"]
