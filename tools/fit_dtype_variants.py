"""Fit each variant of the tuned tables (an entry's own, and its dtype variants) into the GPU's
shared memory, without a GPU.

    python3 tools/fit_dtype_variants.py [--tables T,T] [--check]

An entry's config is tuned for its own dtype; `generate` compiles it again for the argument dtypes
its OpSpec's `dtype_variants` lists (a float32 gradient beside bf16 rows, ...). A wider input can
change what Triton's pipeliner stages in shared memory, not only by the element size: 4-byte loads
qualify for asynchronous copies that 2-byte ones did not, so a row loop pipelined over 3 stages
holds 3 whole float32 rows (the H100's RMSNorm backward at 1x4096: 8 KiB of shared memory in bf16,
264 KiB with a float32 gradient, over the 227 KiB a program may take). For every such variant this
tool cross-compiles (build_tools/cross_compile: Triton's passes for the table's architecture, on
shape-only inputs) the entry's config, and its dynamic twin, at the entry's shape and at its
reduction sizes doubled (the sizes its nearest-shape range reaches: the next power of two up), and
where one does not fit, the first of these that does: the loops not pipelined, then the kernel
not pipelined either. The table records it in the entry's `dtype_configs` (dtype key -> config
overrides), which `generate` applies to that variant alone. Overrides already recorded there (a
config probe's winner for the variant: tools/config_probe.py --dtypes) are kept where they fit and
are the start of the fallbacks where they do not.

An entry's own config is checked the same way, at the shapes it serves beside its own: a config
tuned at one row compiles that row specialized (Triton compiles an integer argument equal to 1
in), and the H100's RMSNorm backward at 1x4096 took 32 bytes of shared memory there and 327,768 at
2 rows and more, so every call from 2 to 1,024 rows (the 64x4096 entry held the same config) ran
PyTorch's backward after the launch failed. Where the entry's config does not fit, the first
fallback that does becomes its config (its recorded dtype variants keep theirs): the tuned shape
may then run other code, so the tool prints each such change (at the 1x4096 entry one row compiles
to the same PTX). `--check` exits 1 where a table differs from what the tool would write. About 1-2
s a variant.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

# Shared memory a program may take (dynamic, opted in), per architecture of a tuned table.
SHARED_MEMORY_LIMIT = {"sm_90": 232448}


def fallbacks(config: dict, recorded: dict) -> list[dict]:
    """Config overrides to try in order: those recorded, then with the loops not pipelined, then
    with the kernel not pipelined either."""
    loops = {**recorded, "range_num_stages": [1] * len({**config, **recorded}.get("range_num_stages", []))}
    return [recorded, loops, {**loops, "num_stages": 1}]


def shapes_served(spec, shape: dict) -> list[dict]:
    """The entry's shape, and its reduction sizes doubled with sizes of 1 made 2 (Triton compiles
    an integer argument equal to 1 in: a decode entry's one row is not what its nearby calls run)."""
    return [shape, {k: v * 2 if k in spec.reduction_keys else max(v, 2) for k, v in shape.items()}]


def largest_shared_memory(spec, config: dict, shape: dict, dtype: torch.dtype, dtypes: dict, target) -> int:
    from build_tools.cross_compile import cross_compile

    args = spec.with_dtypes(tuple(spec.make_inputs(shape, dtype, "meta", 0)), dtypes)
    spec.kernel.reset()
    return max(c.shared_memory for c in cross_compile(spec.kernel.bind(args), args, config, target))


def fitted(spec, entry: dict, dtypes: dict, limit: int, target) -> dict:
    """The first overrides under which the entry's config (and its twin) fits everywhere checked."""
    from helion_kernels._variant import dtypes_key, twin_config

    dtype = getattr(torch, entry["dtype"])
    twin = twin_config(entry)
    for overrides in fallbacks(entry["config"], entry.get("dtype_configs", {}).get(dtypes_key(dtypes), {})):
        # a static config runs at its own reduction sizes only; its twin serves the others
        checks = [({**entry["config"], **overrides}, [entry["shape"]] if twin else shapes_served(spec, entry["shape"]))]
        if twin is not None:
            checks.append(({**twin, **overrides}, shapes_served(spec, entry["shape"])))
        if all(largest_shared_memory(spec, config, shape, dtype, dtypes, target) <= limit
               for config, shapes in checks for shape in shapes):
            return overrides
    raise SystemExit(f"{entry['op']} {entry['dtype']} {json.dumps(entry['shape'])} with {dtypes}: "
                     "no fallback fits the shared memory")


def fit_table(path: Path) -> tuple[dict, list[str]]:
    """(the table with every entry's config and `dtype_configs` as fitted, one line per changed
    variant)."""
    import kernels_src
    from build_tools.autotune.table import load_table, with_config
    from build_tools.cross_compile import H100
    from helion_kernels._variant import dtypes_key

    table = load_table(path)
    limit = SHARED_MEMORY_LIMIT[table["arch"]]
    specs = {spec.name: spec for spec in kernels_src.ALL_OPS}
    lines = []
    for index, entry in enumerate(table["entries"]):
        spec = specs[entry["op"]]
        own = fitted(spec, entry, {}, limit, H100)
        if own:
            entry = table["entries"][index] = with_config(entry, {**entry["config"], **own})
            lines.append(f"{path.name} {entry['op']} {entry['dtype']} {json.dumps(entry['shape'])} "
                         f"own dtypes: {json.dumps(own)} (the entry's config changed)")
        found = {}
        for dtypes in spec.dtype_variants.get(getattr(torch, entry["dtype"]), ()):
            overrides = fitted(spec, entry, dtypes, limit, H100)
            if overrides:
                found[dtypes_key(dtypes)] = overrides
                lines.append(f"{path.name} {entry['op']} {entry['dtype']} {json.dumps(entry['shape'])} "
                             f"{dtypes_key(dtypes)}: {json.dumps(overrides)}")
        entry.pop("dtype_configs", None)
        if found:
            entry["dtype_configs"] = found
    return table, lines


def main(argv=None) -> None:
    from build_tools.autotune.table import table_text, write_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", help="comma-separated table paths (default: tuned_configs/sm_*.json)")
    parser.add_argument("--check", action="store_true", help="exit 1 where a table differs from the fit")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.tables.split(",")] if args.tables else sorted((ROOT / "tuned_configs").glob("sm_*.json"))
    stale = []
    for path in paths:
        table, lines = fit_table(path)
        print("\n".join(lines) or f"{path.name}: every variant fits as tuned", flush=True)
        if table_text(table) != path.read_text():
            stale.append(path.name)
            if not args.check:
                write_table(path, table)
    if args.check and stale:
        raise SystemExit(f"tables that differ from the fit: {', '.join(stale)}")


if __name__ == "__main__":
    main()
