"""The search space of one bound kernel: points are tuples of choice indices, one per knob.

Every ConfigSpec knob has a discrete, ordered list of legal values, so the tuner searches over
indices into those lists and turns a point back into a Config with `unflatten` + `normalize`.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from build_tools.dsl.config_spec import Knob
from helion_kernels._variant import canonical_json

Point = tuple


def config_key(config) -> str:
    """Canonical text of a config: two points that normalize to the same config share it."""
    return canonical_json(config)


def _nearest_index(choices: Sequence, value: Any) -> int:
    """Index of `value` in `choices`, or of the numerically nearest choice (0 when not numeric)."""
    for i, choice in enumerate(choices):
        if choice == value:
            return i
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        numeric = [
            (abs(c - value), i)
            for i, c in enumerate(choices)
            if isinstance(c, (int, float)) and not isinstance(c, bool)
        ]
        if numeric:
            return min(numeric)[1]
    return 0


def runnable_backends(device: str) -> tuple:
    """The config back ends whose kernels run on `device` (a torch device string)."""
    import torch

    from build_tools.dsl.config_spec import BACKENDS
    from helion_kernels._arch import runs_backend

    return tuple(b for b in BACKENDS if runs_backend(b, torch.device(device)))


# Knobs that reshape the whole kernel besides the kernel-wide ones (index None: warps, stages, pid
# type, the kernel's own tunables); the other indexed knobs act on one memory site (SITE_KNOBS) or
# on one loop or generated kernel (loop orders, peeled tails, ring stages, a kernel's back end...).
WHOLE_KERNEL_KNOBS = ("block_sizes", "reduction_loops")
SITE_KNOBS = ("indexing", "load_eviction_policies", "store_subtiles")


class SearchSpace:
    """Maps between index points and Configs of one `ConfigSpec`."""

    def __init__(self, config_spec, backends: Sequence[str] | None = None):
        """`backends`: the config back ends the search may choose (all by default); a device runs
        only some (helion_kernels._arch.runs_backend)."""
        self.config_spec = config_spec
        self.knobs = [Knob(k.name, k.index, tuple(c for c in k.choices if c in backends))
                      if k.name == "backend" and backends is not None else k for k in config_spec.knobs()]
        self.sizes = tuple(len(knob.choices) for knob in self.knobs)
        self.whole_kernel_dims = frozenset(
            d for d, knob in enumerate(self.knobs) if knob.index is None or knob.name in WHOLE_KERNEL_KNOBS)
        self.site_dims = frozenset(
            d for d, knob in enumerate(self.knobs) if knob.index is not None and knob.name in SITE_KNOBS)

    @property
    def dimensions(self) -> int:
        return len(self.knobs)

    def encode(self, config) -> Point:
        """Point of a config; values outside a knob's choices snap to the nearest choice."""
        values = self.config_spec.flatten(self.config_spec.normalize(config))
        return tuple(_nearest_index(knob.choices, value) for knob, value in zip(self.knobs, values))

    def decode(self, point: Point):
        """Normalized Config of a point, or None when the combination is illegal."""
        values = [knob.choices[i] for knob, i in zip(self.knobs, point)]
        try:
            return self.config_spec.normalize(self.config_spec.unflatten(values))
        except Exception:  # InvalidConfig, or any other refusal of the spec: the point is illegal
            return None

    def clip(self, indices: Sequence[float]) -> Point:
        """Round and clamp arbitrary numbers to a legal point."""
        return tuple(
            min(max(int(round(x)), 0), size - 1) for x, size in zip(indices, self.sizes)
        )

    def random_point(self, rng: random.Random) -> Point:
        return tuple(rng.randrange(size) for size in self.sizes)

    def neighbours(self, point: Point) -> list[Point]:
        """Points one step away along one knob (both directions), in a fixed order."""
        result = []
        for dim, size in enumerate(self.sizes):
            for step in (-1, 1):
                i = point[dim] + step
                if 0 <= i < size:
                    result.append(point[:dim] + (i,) + point[dim + 1:])
        return result
