"""One-off table migration for the Gluon kernels' ring depth per kernel (2026-12-03, forty-second
session). Before, a Gluon kernel's rings were `num_stages` deep and its device loops'
`range_num_stages` were ignored; now a Gluon kernel whose loops set them takes that depth
(build_tools/dsl/config_spec.py, `_backend`). Six H100 backward entries carried values left from
their Triton days ([0, 0, 3, 3, 3], [0, 2, 2]) that would now change their dk/dv kernel's depth.
This sets the Gluon kernels' loops' values to 0 (what they ran), recomputes the variant ids and
checks that every entry generates the kernels it did, kernel names aside.

    git stash; python3 scratch/gluon_ring_depth_migration.py dump /tmp/old.json; git stash pop
    python3 scratch/gluon_ring_depth_migration.py migrate /tmp/old.json
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import inner_ends_migration as tables  # noqa: E402
from build_tools import generate  # noqa: E402


def kernels(spec, entry: dict, config: dict) -> list[str]:
    return [re.sub(r"_gluon_[0-9a-f]{10}", "_gluon_X", text) for text in tables.kernels(spec, entry, config)]


def dump(out: str) -> None:
    found = tables.specs()
    codes = {}
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        if path.name != "default.json":
            for entry, key in tables.configs(json.loads(path.read_text())):
                if entry[key].get("backend"):
                    codes[tables.label(path, entry, key)] = kernels(found[entry["op"]], entry, entry[key])
    Path(out).write_text(json.dumps(codes))


def migrate(old_codes: str) -> None:
    old = json.loads(Path(old_codes).read_text())
    found = tables.specs()
    for path in sorted(generate.TABLE_DIR.glob("*.json")):
        if path.name == "default.json":
            continue
        table = json.loads(path.read_text())
        changed = 0
        for entry, key in tables.configs(table):
            config = entry[key]
            backends = config.get("backend")
            if not backends or not any(config.get("range_num_stages", [])):
                continue
            spec = found[entry["op"]]
            zeroed = {**config, "range_num_stages": [0] * len(config["range_num_stages"])}
            bound = generate.bind(spec, entry["shape"], generate._dtype(entry["dtype"]), entry.get("specialization"), zeroed)
            kernel_of = bound.config_spec.found.device_loop_kernels
            gluon = {k for k, b in enumerate(backends if isinstance(backends, list) else [backends] * (max(kernel_of) + 1))
                     if b == "gluon"}
            config["range_num_stages"] = [0 if kernel_of[loop] in gluon else value
                                          for loop, value in enumerate(config["range_num_stages"])]
            assert kernels(spec, entry, config) == old[tables.label(path, entry, key)], tables.label(path, entry, key)
            changed += 1
        tables.save(path, table, changed)


if __name__ == "__main__":
    {"dump": dump, "migrate": migrate}[sys.argv[1]](*sys.argv[2:])
