"""Loading the tuned tables (`tuned_configs/*.json`) that ship with the package.

Tables are looked up, in order, in `$HK_TUNED_CONFIGS`, the package's own `tuned_configs/` folder
(an installed wheel) and the source checkout's top-level `tuned_configs/`.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ._variant import dtype_variant_id, twin_config, variant_id

DEFAULT_ARCH = "default"


@dataclass(frozen=True)
class Entry:
    """One tuned (op, dtype, shape) point of a table and the variant that won it."""

    op: str
    dtype: str
    shape: dict
    config: dict
    variant: str
    us: float | None = None
    # where `config` compiles the reduction sizes in: the config and variant run at other sizes
    twin_config: dict | None = None
    twin: str | None = None
    specialization: dict | None = None
    # argument dtypes key -> overrides of `config` for them (docs/CONTRACTS.md, tuned tables)
    dtype_configs: dict = field(default_factory=dict)

    def dtype_variant(self, key: str, twin: bool = False) -> str | None:
        """The variant of this entry's config (its twin's where `twin`) generated for the argument
        dtypes `key` names, with its `dtype_configs` for them; None without a recorded specialization."""
        if self.specialization is None:
            return None
        return dtype_variant_id(self.op, self.twin_config if twin else self.config, self.specialization, key,
                                self.dtype_configs.get(key, {}))


@dataclass
class Table:
    """A whole `<arch>.json` file, its entries indexed by (op, dtype)."""

    path: Path
    arch: str
    device_name: str | None
    entries: dict = field(default_factory=dict)

    def candidates(self, op: str, dtype: str) -> list:
        return self.entries.get((op, dtype), [])

    @property
    def name(self) -> str:
        return self.path.name


def table_dirs() -> list:
    """Folders that may hold tables, most specific first; only existing ones are returned."""
    here = Path(__file__).resolve().parent
    candidates = []
    if os.environ.get("HK_TUNED_CONFIGS"):
        candidates.append(Path(os.environ["HK_TUNED_CONFIGS"]))
    candidates += [here / "tuned_configs", here.parent / "tuned_configs"]
    return [path for path in candidates if path.is_dir()]


def _entry(raw: dict) -> Entry:
    config = raw.get("config", {})
    variant = raw.get("variant") or variant_id(raw["op"], config, raw.get("specialization", {}))
    twin = twin_config({**raw, "config": config})
    if twin is not None and "specialization" not in raw:
        raise KeyError(f"{raw['op']} entry {raw['shape']} compiles its reduction sizes in but records no "
                       "specialization (its dynamic twin's variant id needs one)")
    return Entry(raw["op"], raw["dtype"], dict(raw["shape"]), config, variant, raw.get("us"), twin,
                 variant_id(raw["op"], twin, raw["specialization"]) if twin is not None else None,
                 raw.get("specialization"), raw.get("dtype_configs", {}))


def load_table(path: Path) -> Table:
    """Parse one table file; raises ValueError naming the file when it is malformed."""
    try:
        raw = json.loads(path.read_text())
        table = Table(path, raw["arch"], raw.get("device_name"))
        for item in raw.get("entries", []):
            entry = _entry(item)
            table.entries.setdefault((entry.op, entry.dtype), []).append(entry)
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"malformed tuned table {path}: {error!r}") from error
    return table


def load_tables() -> list:
    """All tables of the first folder that has any, sorted by file name."""
    for folder in table_dirs():
        paths = sorted(folder.glob("*.json"))
        if paths:
            return [load_table(path) for path in paths]
    return []
