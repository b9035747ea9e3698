"""One-off table migration for per-structure knob lists (2026-11-27, twenty-second session).
Before, `reduction_loops`, the `range_*` lists, `indexing`, `load_eviction_policies` and
`store_subtiles` had one entry per position of the default tunables' structure, whatever structure
a config's tunables compiled: positions past that count took defaults, positions it lacked were
ignored. Now `normalize` sizes them by the compiled structure (build_tools/dsl/config_spec.py,
PER_STRUCTURE_KNOBS), padding with the same defaults, so each tuned config generates the kernels
it did. This rewrites each tuned config to its normalized form (only those lists' lengths change;
asserted) and recomputes the variant ids, so that equal kernels share a variant again (the default
table's entries are written normalized). Checked by dumping every tuned config's kernels before
and after (scratch/inner_ends_migration.py dump): all 193 identical.
Run once: python3 scratch/per_structure_lists_migration.py, then `python -m build_tools generate`."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import inner_ends_migration as tables  # noqa: E402
from build_tools import generate  # noqa: E402
from build_tools.dsl import Config  # noqa: E402
from build_tools.dsl.config_spec import PER_STRUCTURE_KNOBS  # noqa: E402
from helion_kernels._variant import to_plain  # noqa: E402


def migrate() -> None:
    found = tables.specs()
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        if path.name == "default.json":
            continue
        table = json.loads(path.read_text())
        changed = 0
        for entry, key in tables.configs(table):
            config = entry[key]
            bound = generate.bind(found[entry["op"]], entry["shape"], generate._dtype(entry["dtype"]),
                                  entry.get("specialization"), config)
            normalized = to_plain(bound.config_spec.normalize(Config(config)))
            for name in set(config) | set(normalized):
                old, new = config.get(name), normalized.get(name)
                if name in PER_STRUCTURE_KNOBS:
                    common = min(len(old), len(new))
                    assert old[:common] == new[:common], (path.name, entry["op"], name, old, new)
                else:
                    assert old == new, (path.name, entry["op"], name, old, new)
            if normalized != config:
                entry[key] = normalized
                changed += 1
        tables.save(path, table, changed)


if __name__ == "__main__":
    migrate()
