"""Config: one point of a kernel's config space, with Helion's field names; a read-only Mapping."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from . import exc

FIELDS = (
    "block_sizes",
    "loop_orders",
    "flatten_loops",
    "l2_groupings",
    "reduction_loops",
    "range_unroll_factors",
    "range_num_stages",
    "range_multi_buffers",
    "range_flattens",
    "range_warp_specializes",
    "range_peel_tails",
    "persistent_flattens",
    "tile_reversals",
    "static_ranges",
    "num_warps",
    "num_stages",
    "pid_type",
    "indexing",
    "load_eviction_policies",
    "store_subtiles",
    "static_reduction_sizes",
    "backend",
    "consumer_groups",
    "shared_operands",
    "relative_masks",
    "resident_stores",
    "maxnreg",
    "dependent_launches",
    "constexpr_conditions",
)
# the Gluon back end's flags, each one bool or one per top-level loop's kernel (ConfigSpec.per_loop)
GLUON_FLAGS = ("shared_operands", "relative_masks", "resident_stores")
ALIASES = {"l2_grouping": "l2_groupings"}


class Config(Mapping):
    """Kernel configuration. Unknown tunable names (from `hl.register_tunable`) are kept as-is."""

    def __init__(self, config: Mapping | None = None, /, **kwargs: Any):
        values: dict[str, Any] = {}
        for key, value in {**(dict(config) if config else {}), **kwargs}.items():
            key = ALIASES.get(key, key)
            if key == "l2_groupings" and isinstance(value, int):
                value = [value]
            values[key] = _freeze(value)
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[ALIASES.get(key, key)]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values.get(ALIASES.get(name, name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and self.to_dict() == Config(other).to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

    def to_dict(self) -> dict[str, Any]:
        return {k: _thaw(v) for k, v in sorted(self._values.items())}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        data = json.loads(text)
        if not isinstance(data, dict):
            raise exc.InvalidConfig(f"Config JSON must be an object, got {type(data).__name__}")
        return cls(data)

    def merged(self, **updates: Any) -> "Config":
        return Config({**self.to_dict(), **updates})


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value
