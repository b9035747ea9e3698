"""Reading, merging and writing tuned tables (`tuned_configs/<arch>.json`, docs/CONTRACTS.md)."""
from __future__ import annotations

import datetime
import json
import os
import tempfile
from pathlib import Path

from helion_kernels._variant import canonical_json, variant_id

SCHEMA = 1


def entry_key(op: str, dtype: str, shape: dict) -> str:
    """Identity of a tuned entry: op, dtype name and canonical shape."""
    return f"{op}|{dtype}|{canonical_json(shape)}"


def key_of(entry: dict) -> str:
    return entry_key(entry["op"], entry["dtype"], entry["shape"])


def overrides_of(config: dict, base: dict) -> dict:
    """The knobs of `config` whose values differ from `base`'s: `config` as overrides of `base`."""
    return {k: v for k, v in config.items() if base.get(k) != v}


def with_config(entry: dict, config: dict) -> dict:
    """`entry` under a new config: its variant id recomputed and its `dtype_configs` rewritten as
    overrides of `config`, so that each recorded dtype variant keeps the config it was recorded
    with (a change of the entry's own config says nothing of its variants'); those without a record
    follow the new config."""
    changed = {**entry, "config": config, "variant": variant_id(entry["op"], config, entry["specialization"])}
    if entry.get("dtype_configs"):
        changed["dtype_configs"] = {key: overrides_of({**entry["config"], **overrides}, config)
                                    for key, overrides in entry["dtype_configs"].items()}
    return changed


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a killed run never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json_atomic(path: Path, data) -> None:
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def table_text(table: dict) -> str:
    """JSON of a table with one entry per line, so a retune's pull request diffs line by line."""
    header = {k: v for k, v in table.items() if k != "entries"}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()]
    entries = [" " + json.dumps(e, separators=(", ", ": ")) for e in table["entries"]]
    return "{\n" + "\n".join(lines) + '\n "entries": [\n' + ",\n".join(entries) + "\n ]\n}\n"


def write_table(path: Path, table: dict) -> None:
    write_text_atomic(path, table_text(table))


def load_table(path: Path) -> dict | None:
    path = Path(path)
    if not path.exists():
        return None
    table = json.loads(path.read_text())
    if table.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {table.get('schema')}, this tuner writes {SCHEMA}")
    return table


def environment_header(arch: str, device_name: str) -> dict:
    import torch
    import triton

    return {
        "schema": SCHEMA,
        "arch": arch,
        "device_name": device_name,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "tuned_at": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
    }


def _sort_key(entry: dict):
    return (entry["op"], entry["dtype"], canonical_json(entry["shape"]))


def merged_table(header: dict, existing: dict | None, entries: list[dict]) -> dict:
    """`header` plus the existing table's entries, replaced by `entries` where keys coincide."""
    by_key = {key_of(e): e for e in (existing or {}).get("entries", [])}
    by_key.update({key_of(e): e for e in entries})
    return {**header, "entries": sorted(by_key.values(), key=_sort_key)}


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def arch_tables(folder: Path, arch: str, device_name: str) -> list:
    """(path, table) of the readable tables of `arch` in `folder`, as the runtime prefers them on
    `device_name`: the device's own first, then by file name. Other JSON files there (a probe's
    jobs) are passed over."""
    found = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            table = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(table, dict) and table.get("arch") == arch:
            found.append((path, table))
    return sorted(found, key=lambda pair: pair[1].get("device_name") != device_name)


def sibling_entries(path: Path, arch: str, device_name: str) -> dict:
    """key -> entry that the other tables of `arch` beside `path` ship on `device_name` (the
    runtime takes a shape that several tables hold from the table it prefers)."""
    found = {}
    for other, table in arch_tables(Path(path).parent, arch, device_name):
        if other.name != Path(path).name:
            for entry in table.get("entries", []):
                found.setdefault(key_of(entry), entry)
    return found


def table_path_for(folder: Path, arch: str, device_name: str) -> Path:
    """The table file of this architecture and device in `folder`.

    The runtime loads every table and prefers, within an architecture, the entries of the one
    whose `device_name` matches the device (H100 and H200 are both sm_90), so: the existing table
    of this arch and device; else `<arch>.json` unless it belongs to another device; else a
    device-specific `<arch>-<device>.json`.
    """
    folder = Path(folder)
    plain = folder / f"{arch}.json"
    tables = arch_tables(folder, arch, device_name)
    if tables and tables[0][1].get("device_name") == device_name:
        return tables[0][0]
    if not plain.exists() and not tables:
        return plain
    return folder / f"{arch}-{_slug(device_name)}.json"
