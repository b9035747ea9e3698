"""The dispatcher: (op, device, dtype, argument dtypes, shape) -> generated variant + config, cached
per exact key.

The entries of a device's architecture tables form one set: a table whose device name matches the
device refines the others entry by entry (its entry of a shape hides theirs), so a table holding a
few retuned shapes changes only the calls nearest those. Among the entries with the same dtype and
equal `exact_keys` the nearest shape wins (squared distance of log sizes, each key's term times the
op's `key_weights` entry: a reduced dimension decides a config's structure more than the rows).
Only without such an entry does the default table answer. An entry whose variant compiles its
reduction sizes in (`static_reduction_sizes`) runs only where the op's `reduction_keys` equal its
tuned shape's; other sizes run the entry's generated dynamic twin (`_variant.twin_config`), so a
process compiles one static kernel per tuned size, not one per size it meets. Decisions are cached
per exact key, so a repeated call costs one dict lookup. A call some of whose arguments have another
dtype than the op's dtype (softmax's float32 output of bf16 rows, RMSNorm's float32 weight beside
bf16 rows) is keyed by the op's dtype and those arguments' dtypes, and runs the chosen entry's config
compiled for them (OpSpec.dtype_variants; `Entry.dtype_variant` names it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from . import _arch
from ._registry import VariantRegistry
from ._tables import DEFAULT_ARCH, load_tables
from ._variant import dtype_name, dtypes_key


@dataclass(frozen=True)
class Decision:
    """What runs for one exact dispatch key, and why."""

    op: str
    arch: str
    dtype: str
    shape: dict
    dtypes: str | None = None  # the arguments whose dtype is not `dtype` (`_variant.dtypes_key`)
    launcher: Callable | None = None
    variant: str | None = None
    config: dict | None = None  # the config `launcher` runs: the entry's, with its dtype_configs for `dtypes`
    table: str | None = None
    tuned_shape: dict | None = None
    reason: str = ""
    notes: tuple = field(default=())

    @property
    def uses_kernel(self) -> bool:
        return self.launcher is not None


def log_distance(a: dict, b: dict, skip=(), weights=None) -> float:
    """Squared distance of log sizes over the keys both shapes name (sizes below 1 count as 1),
    each key's term times its weight in `weights` (default 1)."""
    total = 0.0
    for key in a.keys() & b.keys():
        if key in skip:
            continue
        weight = weights.get(key, 1.0) if weights else 1.0
        total += weight * (math.log(max(a[key], 1)) - math.log(max(b[key], 1))) ** 2
    return total


class Dispatcher:
    """Holds the tables and generated variants and answers `select` from a per-key cache."""

    def __init__(self, registry: VariantRegistry | None = None, tables_loader=load_tables):
        self.registry = registry or VariantRegistry()
        self._tables_loader = tables_loader
        self._tables = None
        self._cache = {}
        self._device_arch = {}
        self.plans = {}  # the public functions' direct-call plans (see _direct), built on decisions
        self.replays = {}  # their recorded native replays (see _direct)

    @property
    def tables(self) -> list:
        if self._tables is None:
            self._tables = self._tables_loader()
        return self._tables

    def reload(self):
        """Forget tables, architecture, decisions and plans (after changing HK_* variables or tables)."""
        self._tables = None
        self._cache.clear()
        self._device_arch.clear()
        self.plans.clear()
        self.replays.clear()

    def select(self, op: str, device: torch.device, dtype: torch.dtype, names: tuple,
               values: tuple, dtypes: tuple = ()) -> Decision:
        """Decision for one call; `names`/`values` are the op's shape keys and their sizes, and
        `dtypes` the (argument, dtype) pairs of the arguments whose dtype is not `dtype`."""
        key = (op, device, dtype, dtypes, values)
        decision = self._cache.get(key)
        if decision is None:
            decision = self._cache[key] = self.resolve(op, device, dtype, dict(zip(names, values)), dtypes)
        return decision

    def device_arch(self, device: torch.device) -> tuple:
        found = self._device_arch.get(device)
        if found is None:
            found = self._device_arch[device] = (_arch.arch_key(device), _arch.device_name(device))
        return found

    def tables_for(self, arch: str, device_name: str | None) -> list:
        """Groups of tables to consult for an architecture, best first: its own tables (those of
        the device first), then the default table(s)."""
        own = [t for t in self.tables if t.arch == arch]
        own.sort(key=lambda t: t.device_name != device_name)
        return [own, [t for t in self.tables if t.arch == DEFAULT_ARCH and arch != DEFAULT_ARCH]]

    def usable_entries(self, tables: list, op: str, dtype: str, shape: dict, launchers: dict,
                       exact_keys: tuple, notes: list, device: torch.device) -> list:
        """(table, entry) of each tuned shape of `tables` that can run `shape` on `device`: a
        generated variant of a back end that runs there, and equal exact keys; the first table's
        entry of a shape that several hold."""
        found = {}
        for table in tables:
            entries = table.candidates(op, dtype)
            usable = [e for e in entries if e.variant in launchers]
            if len(usable) < len(entries):
                notes.append(f"{table.name}: {len(entries) - len(usable)} entries for {op}/{dtype} "
                             "have no generated variant (run `python -m build_tools generate`)")
            runnable = [e for e in usable if _arch.runs_backend(e.config.get("backend", "triton"), device)]
            if len(runnable) < len(usable):
                notes.append(f"{table.name}: {len(usable) - len(runnable)} entries for {op}/{dtype} use a back end "
                             f"that does not run on {device} (backend \"gluon\": a Hopper GPU)")
            usable = runnable
            usable = [e for e in usable if all(e.shape.get(k) == shape.get(k) for k in exact_keys)]
            if not usable and table.arch != DEFAULT_ARCH and entries:
                notes.append(f"{table.name}: no entry for {op}/{dtype} with "
                             + ", ".join(f"{k}={shape.get(k)}" for k in exact_keys))
            for e in usable:
                found.setdefault(frozenset(e.shape.items()), (table, e))
        return list(found.values())

    def resolve(self, op: str, device: torch.device, dtype: torch.dtype, shape: dict,
                dtypes: tuple = ()) -> Decision:
        arch, name = self.device_arch(device)
        dtype_str = dtype_name(dtype)
        others = dtypes_key(dtypes) or None
        launchers = self.registry.launchers(op)
        info = self.registry.op_info(op)
        exact_keys = tuple(info.get("exact_keys", ()))
        weights = info.get("key_weights")
        notes = []
        has_own = any(t.arch == arch for t in self.tables)
        if not has_own:
            notes.append(f"no tuned table for architecture {arch}; using the default table")
        for tables in self.tables_for(arch, name):
            usable = self.usable_entries(tables, op, dtype_str, shape, launchers, exact_keys, notes, device)
            if not usable:
                continue
            table, best = min(usable, key=lambda pair: log_distance(pair[1].shape, shape, exact_keys, weights))
            exact = all(best.shape.get(k) == v for k, v in shape.items())
            how = "exact tuned shape" if exact else f"nearest tuned shape {best.shape}"
            variant, config = best.variant, best.config
            untuned = any(shape.get(k) != best.shape.get(k) for k in info.get("reduction_keys", ()))
            twin = untuned and best.twin in launchers
            if twin:
                variant, config = best.twin, best.twin_config
                how += f", through its dynamic twin {best.twin} ({best.variant} compiles the tuned reduction sizes in)"
            elif untuned and best.twin is not None:
                notes.append(f"{table.name}: the dynamic twin {best.twin} of {best.variant} has no generated "
                             "variant (run `python -m build_tools generate`); the static variant compiles this size")
            if others is not None:
                derived = best.dtype_variant(others, twin)
                if derived not in launchers:
                    return Decision(op, arch, dtype_str, shape, others, notes=tuple(notes),
                                    reason=f"{table.name}: {how}; its config is not generated for {others} "
                                    "(the op's dtype_variants); running the op's fallback for these dtypes")
                variant, how = derived, how + f", compiled for {others}"
                config = {**config, **best.dtype_configs.get(others, {})}
            return Decision(op, arch, dtype_str, shape, others, launchers[variant], variant, config, table.name,
                            best.shape, f"{table.name} ({table.arch}, {table.device_name or 'any device'}): {how}",
                            tuple(notes))
        return Decision(op, arch, dtype_str, shape, others, notes=tuple(notes),
                        reason=f"no generated variant of {op} for {dtype_str}"
                        + "".join(f", {k}={shape.get(k)}" for k in exact_keys)
                        + "; running the PyTorch implementation")


DISPATCHER = Dispatcher()
