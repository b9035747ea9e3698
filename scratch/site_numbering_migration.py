"""One-off table migration for the DSL's memory-site numbering (2026-11-27, twenty-first session).
Before, `indexing`, `load_eviction_policies` and `store_subtiles` were numbered per emitted access,
so a structure that emits one source access twice (a peeled loop's tail copy, the two copies of a
warp-specialized loop, a looped reduction's second pass, a prefetched first tile) took extra
positions and shifted every later access. Now an access is numbered once, at its first emission:
its copies share its knobs. This rewrites each tuned config's three lists so that every access
keeps the value its first emission had (the copy in the main loop), which gives back the kernels
generated before wherever all copies of an access had the same value, and recomputes the entries'
variant ids. Checked by dumping every tuned config's kernels before and after
(scratch/inner_ends_migration.py dump): 191 of 193 identical; in the other two (the H100's
rms_norm_bwd fp32 1x4096 and softmax_fwd fp32 4096x131072) a reload now takes the eviction hint
(evict_last) of the access's first load.
Run once:
    (cd OLD_CHECKOUT && python3 NEW/scratch/site_numbering_migration.py emissions /tmp/emissions.json)
    python3 scratch/site_numbering_migration.py migrate /tmp/emissions.json
then `python -m build_tools generate` and `python -m build_tools default-table`."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import inner_ends_migration as tables  # noqa: E402
from build_tools import generate  # noqa: E402
from build_tools.dsl import Config  # noqa: E402


def emissions(out: str) -> None:
    """Under the old compiler: per config, its final compile's accesses in emission order, each as
    [kind, source key, position in `indexing`, position among its kind]."""
    from build_tools.dsl import memory, session
    current, records = [], []
    original = {"load": memory.MemoryMixin.load, "store": memory.MemoryMixin.store}
    site_of = session.CompileSession.memory_site

    def load(self, tensor, index, extra_mask, node, eviction_policy=None):
        current.append(("load", f"{node.lineno}:{node.col_offset}:{tensor.param}"))
        try:
            return original["load"](self, tensor, index, extra_mask, node, eviction_policy)
        finally:
            current.pop()

    def store(self, tensor, index, value, extra_mask, node):
        current.append(("store", f"{node.lineno}:{node.col_offset}:{tensor.param}"))
        try:
            return original["store"](self, tensor, index, value, extra_mask, node)
        finally:
            current.pop()

    def memory_site(self, kind):
        site = site_of(self, kind)
        position = self.found.loads - 1 if kind == "load" else self.found.stores - 1
        records.append((id(self), [*current[-1], site, position]))
        return site

    memory.MemoryMixin.load, memory.MemoryMixin.store = load, store
    session.CompileSession.memory_site = memory_site
    found, result = tables.specs(), {}
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        if path.name == "default.json":
            continue
        for entry, key in tables.configs(json.loads(path.read_text())):
            records.clear()
            tables.kernels(found[entry["op"]], entry, entry[key])
            last = records[-1][0]  # the compile under the entry's config (after discovery's)
            result[tables.label(path, entry, key)] = [r for session_id, r in records if session_id == last]
    Path(out).write_text(json.dumps(result))


LISTS = {"indexing": ("pointer", None), "load_eviction_policies": ("", "load"), "store_subtiles": (1, "store")}


def renumbered(config: dict, accesses: list) -> dict:
    """`config` with its three lists indexed by first emission: each access keeps the value of its
    first emission (positions past a list took its default)."""
    lists = LISTS
    new = {name: [] for name in lists}
    seen = set()
    for kind, source, site, position in accesses:
        if (kind, source) in seen:
            continue
        seen.add((kind, source))
        for name, (default, only) in lists.items():
            if only not in (None, kind):
                continue
            old = config.get(name) or []
            index = site if only is None else position
            new[name].append(old[index] if index < len(old) else default)
    return {**config, **{name: values for name, values in new.items() if name in config}}


def migrate(emissions_file: str) -> None:
    from helion_kernels._variant import to_plain
    accesses = json.loads(Path(emissions_file).read_text())
    found = tables.specs()
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        if path.name == "default.json":
            continue
        table = json.loads(path.read_text())
        changed = 0
        for entry, key in tables.configs(table):
            spec = found[entry["op"]]
            config = renumbered(entry[key], accesses[tables.label(path, entry, key)])
            others = {name: value for name, value in config.items() if name not in LISTS}
            bound = generate.bind(spec, entry["shape"], generate._dtype(entry["dtype"]), entry.get("specialization"), others)
            sites = bound.config_spec.found
            for name, length in (("indexing", sites.loads + sites.stores), ("load_eviction_policies", sites.loads),
                                 ("store_subtiles", sites.stores)):
                if name in config:  # the new structure's length (accesses past it take the default)
                    config[name] = (config[name] + [LISTS[name][0]] * length)[:length]
            config = to_plain(bound.config_spec.normalize(Config(config)))
            if config != entry[key]:
                entry[key] = config
                changed += 1
        tables.save(path, table, changed)


if __name__ == "__main__":
    {"emissions": emissions, "migrate": migrate}[sys.argv[1]](sys.argv[2])
