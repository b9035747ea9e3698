"""One-off table migration for the DSL's merged-row tensor descriptors (2026-11-27, nineteenth
session). Before them, a load or store whose leading dims are indexed by scalars (`k[b, h, tile, :]`)
ran through pointers whatever its `indexing` said; now `tensor_descriptor` gives it a descriptor.
Entries whose configs named descriptors at such sites ran the pointer kernels that were measured,
so this sets those sites to "pointer" (the kernels stay the ones measured) and recomputes the
entries' variant ids. Run once: python3 scratch/merged_rows_migration.py; then
`python -m build_tools generate`."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools import generate  # noqa: E402
from build_tools.autotune.table import write_table  # noqa: E402
from build_tools.dsl import Config  # noqa: E402
from build_tools.dsl.memory import MemoryMixin  # noqa: E402
from build_tools.dsl.session import CompileSession  # noqa: E402
from helion_kernels._variant import variant_id  # noqa: E402

MERGED_SITES: set = set()
_indexing, _tma_flag = CompileSession.indexing, MemoryMixin.tma_flag


def indexing(self, site):
    self.current_site = site
    return _indexing(self, site)


def tma_flag(self, tensor, addr, *args, **kwargs):
    if addr.row_terms:
        MERGED_SITES.add(self.session.current_site)
    return _tma_flag(self, tensor, addr, *args, **kwargs)


CompileSession.indexing, MemoryMixin.tma_flag = indexing, tma_flag


def migrate(config: dict, spec, entry: dict) -> dict:
    MERGED_SITES.clear()
    bound = generate.bind(spec, entry["shape"], generate._dtype(entry["dtype"]), entry.get("specialization"), config)
    bound.generate(Config.from_json(json.dumps(config)), "probe")
    if not MERGED_SITES:
        return config
    indexing_list = list(config["indexing"])
    for site in MERGED_SITES:
        indexing_list[site] = "pointer"
    return {**config, "indexing": indexing_list}


def main():
    specs = {spec.name: spec for family in generate.op_families().values() for spec in family}
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        table = json.loads(path.read_text())
        changed = 0
        for entry in table["entries"]:
            spec = specs[entry["op"]]
            for key in ("config", "dynamic_config"):
                if key in entry and "tensor_descriptor" in entry[key].get("indexing", []):
                    new = migrate(entry[key], spec, entry)
                    if new != entry[key]:
                        print(path.name, entry["op"], entry["dtype"], entry["shape"], key, entry[key]["indexing"], "->", new["indexing"])
                        entry[key] = new
                        changed += 1
            entry["variant"] = variant_id(entry["op"], entry["config"], entry["specialization"])
        if changed:
            write_table(path, table)
        print(path.name, "entries changed:", changed)


if __name__ == "__main__":
    main()
