"""One-off table migration for the RMSNorm backward's lone-program dweight store (2026-12-02,
thirty-fifth session). The kernel source gained a store (`grad_weight` written by the main pass when
one program covers every row) in each structure, so the memory sites after it moved up by one in
`indexing` and `store_subtiles`. This compiles each rms_norm_bwd entry under the source before the
change (git HEAD, or the revision given) and after it, matches their sites by source position (the
old source's lines mapped onto the new one's), carries each old site's knobs to its new position,
gives the new sites the neutral values ("pointer", 1) and recomputes the entries' variant ids.
Run once: python3 scratch/direct_dweight_migration.py [REV]; then `python -m build_tools default-table`
and `python -m build_tools generate`."""
import difflib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from build_tools import generate  # noqa: E402
from build_tools.autotune.table import write_table  # noqa: E402
from build_tools.dsl import Config  # noqa: E402
from build_tools.dsl.session import CompileSession  # noqa: E402
from helion_kernels._variant import variant_id  # noqa: E402

SITES: list = []
_memory_site = CompileSession.memory_site


def memory_site(self, kind, access):
    """Records the sites of the latest compile (each compile numbers its sites from 0)."""
    if not self.memory_sites:
        SITES.clear()
    known = self.memory_sites.get((kind, access)) is not None
    result = _memory_site(self, kind, access)
    if not known:
        node = access[0]
        SITES.append((kind, node.lineno, node.col_offset))
    return result


CompileSession.memory_site = memory_site


def old_module(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:kernels_src/rms_norm.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = ROOT / "kernels_src" / "_rms_norm_before_direct_dweight.py"
    path.write_text(source)  # the DSL reads a kernel's source from its file: removed by main()
    spec = importlib.util.spec_from_file_location("kernels_src._rms_norm_before_direct_dweight", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, source, path


def line_map(old_source: str, new_source: str) -> dict[int, int]:
    """Old line number -> new, by lines equal up to indentation (a store moved into a branch keeps its site)."""
    matcher = difflib.SequenceMatcher(a=[line.strip() for line in old_source.splitlines()],
                                      b=[line.strip() for line in new_source.splitlines()], autojunk=False)
    mapping = {}
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            mapping[block.a + i + 1] = block.b + i + 1
    return mapping


def sites(kernel, entry: dict, config: dict, shape: dict) -> list:
    SITES.clear()
    spec = next(s for family in generate.op_families().values() for s in family if s.name == entry["op"])
    kernel.reset()
    bound = kernel.bind(spec.make_inputs(shape, generate._dtype(entry["dtype"]), "cpu", 0))
    bound.generate(Config.from_json(json.dumps(config)), "probe")
    return list(SITES)


def bind_shape(kernel, entry: dict, config: dict) -> dict:
    """The smallest capped shape on which the entry's config is legal under the old source."""
    spec = next(s for family in generate.op_families().values() for s in family if s.name == entry["op"])
    for candidate in generate._capped_shapes(spec, entry["shape"]):
        kernel.reset()
        if generate.keeps_config(kernel.bind(spec.make_inputs(candidate, generate._dtype(entry["dtype"]), "cpu", 0)), config):
            return candidate
    raise RuntimeError(f"no shape keeps {entry['shape']}'s config")


def migrate(config: dict, entry: dict, old_kernel, new_kernel, lines: dict) -> dict:
    shape = bind_shape(old_kernel, entry, config)
    old = sites(old_kernel, entry, config, shape)
    new = sites(new_kernel, entry, {k: v for k, v in config.items() if k not in ("indexing", "store_subtiles")}, shape)
    old_at = {(kind, lines[line]): i for i, (kind, line, _) in enumerate(old)}
    old_stores = [i for i, (kind, _, _) in enumerate(old) if kind == "store"]
    indexing, subtiles = [], []
    for kind, line, _ in new:
        i = old_at.get((kind, line))
        indexing.append(config["indexing"][i] if i is not None and i < len(config["indexing"]) else "pointer")
        if kind == "store":
            subtiles.append(config["store_subtiles"][old_stores.index(i)] if i is not None else 1)
    assert sum(kind == "load" for kind, _, _ in new) == sum(kind == "load" for kind, _, _ in old)
    return {**config, "indexing": indexing, "store_subtiles": subtiles}


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    from kernels_src import rms_norm
    old, old_source, old_path = old_module(rev)
    try:
        migrate_tables(old, rms_norm, line_map(old_source, (ROOT / "kernels_src" / "rms_norm.py").read_text()))
    finally:
        old_path.unlink()


def migrate_tables(old, rms_norm, lines: dict) -> None:
    for path in sorted(generate.TABLE_DIR.glob("sm_*.json")):  # default.json: `python -m build_tools default-table`
        table = json.loads(path.read_text())
        changed = 0
        for entry in table["entries"]:
            if entry["op"] != "rms_norm_bwd":
                continue
            for key in ("config", "dynamic_config"):
                if key in entry:
                    new = migrate(entry[key], entry, old.rms_norm_bwd, rms_norm.rms_norm_bwd, lines)
                    if new != entry[key]:
                        entry[key] = new
                        changed += 1
            entry["variant"] = variant_id(entry["op"], entry["config"], entry["specialization"])
        if changed:
            write_table(path, table)
        print(path.name, "configs changed:", changed)


if __name__ == "__main__":
    main()
