"""What a run tunes: the (op, dtype, shape) entries of the suites, and neighbour seeds for each.

Neighbouring shapes of the same op tend to share good configs, so each entry's search starts
from the winners of the nearest already-finished entries (log-distance over the shape keys;
keys listed in the op's `exact_keys`, and non-numeric keys, must match).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from build_tools.autotune.table import entry_key
from helion_kernels._variant import dtype_name


@dataclass(frozen=True)
class Entry:
    op: object       # OpSpec
    dtype: object    # torch.dtype
    shape: dict

    @property
    def op_name(self) -> str:
        return self.op.name

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    @property
    def key(self) -> str:
        return entry_key(self.op.name, self.dtype_name, self.shape)

    def label(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.shape.items())
        return f"{self.op.name} {self.dtype_name} [{dims}]"


def plan_entries(ops, only_ops=None, match=(), skip_keys=()) -> list[Entry]:
    """Every (op, dtype, shape) of the suites, ops in library order, optionally filtered: by op
    name, to entries whose label contains one of the `match` substrings
    (`Entry.label()`, e.g. "rms_norm_fwd bfloat16 [M=16384,"), and without the keys in `skip_keys`."""
    if only_ops:
        unknown = set(only_ops) - {op.name for op in ops}
        if unknown:
            raise ValueError(f"unknown ops: {', '.join(sorted(unknown))}")
    entries = [
        Entry(op, dtype, dict(shape))
        for op in ops
        if not only_ops or op.name in only_ops
        for dtype in op.dtypes
        for shape in op.shapes
    ]
    return [e for e in entries
            if (not match or any(text in e.label() for text in match)) and e.key not in skip_keys]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shape_distance(a: dict, b: dict, exact_keys=()) -> float:
    """Sum of |log2| ratios over numeric keys; inf when keys, exact keys or other values differ."""
    if a.keys() != b.keys():
        return math.inf
    total = 0.0
    for key in a:
        x, y = a[key], b[key]
        if key in exact_keys or not (_is_number(x) and _is_number(y)):
            if x != y:
                return math.inf
            continue
        total += abs(math.log2(max(x, 1)) - math.log2(max(y, 1)))
    return total


def neighbour_configs(entry: Entry, finished: dict, limit: int = 2, other_dtype_penalty: float = 1.0) -> list:
    """Configs (plain dicts) of the nearest finished entries of the same op, nearest first."""
    scored = []
    for record in finished.values():
        if record.get("op") != entry.op_name or "config" not in record:
            continue
        distance = shape_distance(entry.shape, record["shape"], entry.op.exact_keys)
        if record.get("dtype") != entry.dtype_name:
            distance += other_dtype_penalty
        if math.isfinite(distance):
            scored.append((distance, entry_key(record["op"], record["dtype"], record["shape"]), record["config"]))
    scored.sort(key=lambda item: item[:2])
    result = []
    for _, _, config in scored:
        if config not in result:
            result.append(config)
        if len(result) == limit:
            break
    return result


def untuned_config(entry: Entry, records) -> dict | None:
    """The config the runtime would run for `entry` without a tuned entry: the one of the nearest
    record of the same op and dtype with equal exact keys, nearest as the dispatcher measures it."""
    from helion_kernels._dispatch import log_distance

    exact = tuple(entry.op.exact_keys)
    usable = [r for r in records
              if r["op"] == entry.op_name and r["dtype"] == entry.dtype_name
              and all(r["shape"].get(k) == entry.shape.get(k) for k in exact)]
    if not usable:
        return None
    weights = dict(entry.op.key_weights)
    return min(usable, key=lambda r: log_distance(r["shape"], entry.shape, exact, weights))["config"]


def shrink_shape(shape: dict, exact_keys=(), cap: int = 64, small: int = 2) -> dict:
    """A tiny version of a suite shape for interpreter smoke runs. Numeric keys that are not exact
    keys shrink: counts up to `cap` (batch, heads) to at most `small`, larger sizes to `cap`."""
    def shrink(key, value):
        if not _is_number(value) or key in exact_keys:
            return value
        return min(value, small) if value <= cap else cap
    return {k: shrink(k, v) for k, v in shape.items()}


SMOKE_DTYPE_PREFERENCE = ("float32", "float16")


def smoke_entries(ops, only_ops=None, cap: int = 64) -> list[Entry]:
    """One tiny entry per op: its smallest suite shape, shrunk, in float32 (else float16, else its
    first dtype), because Triton's interpreter gets bf16 dots wrong (notes/dsl_gaps_autotune.md)."""
    chosen = [op for op in ops if not only_ops or op.name in only_ops]
    entries = []
    for op in chosen:
        smallest = min(op.shapes, key=lambda s: math.prod(v for v in s.values() if _is_number(v)))
        by_name = {dtype_name(d): d for d in op.dtypes}
        dtype = next((by_name[n] for n in SMOKE_DTYPE_PREFERENCE if n in by_name), op.dtypes[0])
        entries.append(Entry(op, dtype, shrink_shape(smallest, op.exact_keys, cap)))
    return entries
