"""`python -m build_tools generate [--check]`: tuned tables -> `helion_kernels/_generated/<family>.py`.

For every entry of `tuned_configs/*.json` (the default table included) the entry's op is bound on
inputs of the entry's dtype and the smallest capped version of its shape that keeps the recorded
specialization and accepts the config unchanged (the DSL derives its config space from the bound
sizes), and compiled for the entry's config. An entry whose config compiles its reduction sizes in
also gets its dynamic twin (`twin_config`), which the dispatcher runs at other reduction sizes, and
both are compiled again for each set of other argument dtypes the op's `dtype_variants` lists for the
entry's dtype, under ids the dispatcher derives from the entry (`dtype_variant_id`).
Each kernels_src module (a "family") becomes one standalone module holding the deduplicated Triton
kernels, one launcher per variant and the `VARIANTS`/`OP_INFO` indexes the runtime reads, and
`REPLAYABLE`, the launchers a direct call may record and replay natively. Output is deterministic;
`--check` compares it with the files on disk instead.
"""
from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from build_tools.dsl.emitter import split_combine_functions
from build_tools.dsl.gluon_lowering import HEADER
from helion_kernels._variant import (canonical_json, dtype_variant_id, dtypes_key, to_plain, twin_config, variant_id,
                                     with_dtypes)

REPO = Path(__file__).resolve().parent.parent
TABLE_DIR = REPO / "tuned_configs"
OUT_DIR = REPO / "helion_kernels" / "_generated"
ALLOWED_IMPORTS = ("import math", "import torch", "import triton", "import triton.language as tl")
# the Gluon back end's imports (build_tools/dsl/gluon_lowering.HEADER), in a module only where a kernel uses them
GLUON_IMPORTS = tuple(line for line in HEADER.splitlines() if line)
BIND_CAPS = (16, 256, 2048)
PACKAGE_DOC = '"""Generated Triton modules, one per kernels_src family (written by `python -m build_tools generate`)."""\n'


class GenerationError(RuntimeError):
    """A table entry that cannot be turned into a variant."""


@dataclass
class Variant:
    """One (op, config, specialization) to emit, and the table entries that use it."""

    op: str
    vid: str
    config: dict
    specialization: dict
    bound: object
    used_by: list = field(default_factory=list)


def op_families() -> dict:
    """family name -> list of OpSpec, from the modules of kernels_src that define OPS."""
    import kernels_src

    families = {}
    for info in sorted(pkgutil.iter_modules(kernels_src.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kernels_src.{info.name}")
        if getattr(module, "OPS", None):
            families[info.name] = list(module.OPS)
    return families


def table_entries(table_dir: Path = TABLE_DIR) -> list:
    """(table file name, entry) for every entry of every table, in file order."""
    found = []
    for path in sorted(table_dir.glob("*.json")):
        for entry in json.loads(path.read_text()).get("entries", []):
            found.append((path.name, entry))
    return found


def _capped_shapes(spec, shape: dict) -> list:
    """Shapes to bind on, smallest first: every non-exact size capped at each of BIND_CAPS, then
    only the largest size kept, then the real shape."""
    sizes = {k: v for k, v in shape.items()
             if k not in spec.exact_keys and isinstance(v, int) and not isinstance(v, bool)}
    largest = max(sizes, key=lambda k: (sizes[k], k)) if sizes else None
    candidates = [{**shape, **{k: min(v, cap) for k, v in sizes.items()}} for cap in BIND_CAPS]
    candidates.append({**shape, **{k: min(v, BIND_CAPS[0]) for k, v in sizes.items() if k != largest}})
    candidates.append(dict(shape))
    unique = []
    for candidate in candidates:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def keeps_config(bound, config: dict) -> bool:
    """True when the bound kernel's config spec accepts `config` without changing any given value."""
    from build_tools.dsl import Config, exc

    try:
        normalized = to_plain(bound.config_spec.normalize(Config(config)))
    except exc.InvalidConfig:
        return False
    return all(normalized.get(key) == to_plain(value) for key, value in config.items())


def _inputs(spec, shape: dict, dtype: torch.dtype, dtypes: dict | None) -> tuple:
    """spec's inputs for (shape, dtype) on the meta device (binding reads shapes and dtypes, no data), with the
    arguments named in `dtypes` in theirs."""
    args = tuple(spec.make_inputs(shape, dtype, "meta", 0))
    return spec.with_dtypes(args, dtypes) if dtypes else args


def bind(spec, shape: dict, dtype: torch.dtype, specialization: dict | None = None, config: dict | None = None,
         dtypes: dict | None = None):
    """Bind spec's kernel for (shape, dtype) on the smallest capped shape that keeps the
    specialization `specialization` and accepts `config` unchanged (the DSL derives its config
    space from the bound sizes), ending with the real shape; with `dtypes`, on inputs whose
    arguments named there have those dtypes."""
    bound = None
    for candidate in _capped_shapes(spec, shape):
        spec.kernel.reset()
        bound = spec.kernel.bind(_inputs(spec, candidate, dtype, dtypes))
        same = specialization is None or canonical_json(bound.specialization_key()) == canonical_json(specialization)
        if same and (config is None or keeps_config(bound, config)):
            return bound
    if specialization is not None and canonical_json(bound.specialization_key()) != canonical_json(specialization):
        raise GenerationError(f"{spec.name}: binding on {shape} gives specialization "
                              f"{bound.specialization_key()}, the table records {specialization}")
    raise GenerationError(f"{spec.name}: config {config} is not legal for shape {shape}")


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise GenerationError(f"unknown dtype {name!r}")
    return dtype


def collect_variants(families: dict, entries: list) -> dict:
    """family -> {(op, vid): Variant} for every table entry; raises GenerationError on bad entries."""
    spec_family = {spec.name: (family, spec) for family, specs in families.items() for spec in specs}
    variants = {family: {} for family in families}
    for table_name, entry in entries:
        op = entry["op"]
        if op not in spec_family:
            raise GenerationError(f"{table_name}: entry for unknown op {op!r}")
        family, spec = spec_family[op]
        recorded = entry.get("specialization")
        if recorded is None and not entry.get("variant"):
            raise GenerationError(f"{table_name}: {op} entry {entry['shape']} has neither "
                                  "'specialization' nor 'variant'")
        config = dict(entry["config"])
        vid = entry.get("variant") or variant_id(op, config, recorded)
        key = (op, vid)
        if key not in variants[family]:
            bound = bind(spec, entry["shape"], _dtype(entry["dtype"]), recorded, config)
            specialization = to_plain(bound.specialization_key())
            expected = variant_id(op, config, specialization)
            if expected != vid:
                raise GenerationError(f"{table_name}: {op} entry {entry['shape']} names variant {vid}, "
                                      f"but its config and specialization give {expected}")
            variants[family][key] = Variant(op, vid, config, specialization, bound)
        variants[family][key].used_by.append(
            f"{table_name} {entry['dtype']} {canonical_json(entry['shape'])}")
        bases = [variants[family][key]]
        if twin_config(entry) is not None:
            bases.append(add_dynamic_twin(spec, variants[family], bases[0], entry, table_name))
        for dtypes in spec.dtype_variants.get(_dtype(entry["dtype"]), ()):
            overrides = entry.get("dtype_configs", {}).get(dtypes_key(dtypes), {})
            for base in bases:
                add_dtype_variant(spec, variants[family], base, entry, dtypes, overrides)
    return variants


def add_dtype_variant(spec, family_variants: dict, base: Variant, entry: dict, dtypes: dict, overrides: dict) -> None:
    """Add the variant of `base`'s config, changed by `overrides` (the entry's `dtype_configs` for
    these dtypes: tools/fit_dtype_variants.py), whose arguments named in `dtypes` have those dtypes
    (OpSpec.dtype_variants). Its id is `dtype_variant_id`'s, which the dispatcher derives from the entry."""
    key = dtypes_key(dtypes)
    vid = dtype_variant_id(spec.name, base.config, base.specialization, key, overrides)
    if (spec.name, vid) not in family_variants:
        config = {**base.config, **overrides}
        specialization = with_dtypes(base.specialization, dtypes)
        bound = bind(spec, entry["shape"], _dtype(entry["dtype"]), specialization, config, dtypes)
        family_variants[(spec.name, vid)] = Variant(spec.name, vid, config, specialization, bound)
    used_by = family_variants[(spec.name, vid)].used_by
    if f"variant {base.vid} with {key}" not in used_by:  # every entry of `base`'s config derives it
        used_by.append(f"variant {base.vid} with {key}")


def add_dynamic_twin(spec, family_variants: dict, static: Variant, entry: dict, table_name: str) -> Variant:
    """Add the dynamic twin of an entry whose variant compiles its reduction sizes in: the config it
    runs at sizes of `spec.reduction_keys` other than its shape's (`twin_config`), so that a process
    compiles the static kernel only for tuned sizes."""
    where = f"{table_name}: {spec.name} entry {canonical_json(entry['shape'])}"
    if not spec.reduction_keys:
        raise GenerationError(f"{where} compiles its reduction sizes in (static_reduction_sizes), but the "
                              "op's OpSpec names no reduction_keys")
    config = twin_config(entry)
    if config.get("static_reduction_sizes"):
        raise GenerationError(f"{where}: its dynamic_config compiles reduction sizes in too")
    vid = variant_id(spec.name, config, static.specialization)
    if (spec.name, vid) not in family_variants:
        bound = static.bound if keeps_config(static.bound, config) else bind(
            spec, entry["shape"], _dtype(entry["dtype"]), static.specialization, config)
        family_variants[(spec.name, vid)] = Variant(spec.name, vid, config, static.specialization, bound)
    family_variants[(spec.name, vid)].used_by.append(
        f"{table_name} {entry['dtype']} {canonical_json(entry['shape'])} at other reduction sizes")
    return family_variants[(spec.name, vid)]


_IMPORT_LINE = re.compile(r"^(?:import|from)\s.*$", re.MULTILINE)


def _split_imports(source: str) -> tuple:
    """(import lines, the source without them); rejects imports outside torch/triton/math."""
    imports = [line.strip() for line in _IMPORT_LINE.findall(source)]
    for line in imports:
        if line not in ALLOWED_IMPORTS + GLUON_IMPORTS and line != "from __future__ import annotations":
            raise GenerationError(f"generated code imports {line!r}; only {ALLOWED_IMPORTS} are allowed")
    return imports, _IMPORT_LINE.sub("", source).strip("\n")


def _comment(text: str) -> str:
    return "\n".join(f"# {line}" if line else "#" for line in text.splitlines())


def render_family(family: str, specs: list, variants: dict) -> str:
    """Source text of `_generated/<family>.py`."""
    from build_tools.dsl import Config
    from build_tools.dsl.replayable import replayable as launcher_replayable

    kernels, helpers, combines, launchers, replayable = {}, {}, {}, [], []
    gluon = False
    for (op, vid), variant in sorted(variants.items()):
        code = variant.bound.generate(Config.from_json(json.dumps(variant.config)), f"{op}__{vid}")
        helpers.update(code.helpers)
        for name, source in sorted(code.kernels.items()):
            imports, body = _split_imports(source)
            gluon = gluon or any(line in GLUON_IMPORTS for line in imports)
            found, body = split_combine_functions(body)  # defined once in the module, shared by its kernels
            for combine, text in found.items():
                if combines.setdefault(combine, text) != text:
                    raise GenerationError(f"{family}: two different combine functions are both named {combine}")
            body = body.strip("\n")
            if kernels.setdefault(name, body) != body:
                raise GenerationError(f"{family}: two different kernels are both named {name}")
        _, launcher = _split_imports(code.launcher)
        if launcher_replayable(launcher):
            replayable.append(f"{op}__{vid}")
        header = (f"{op} variant {vid}\nconfig: {canonical_json(variant.config)}\n"
                  f"specialization: {canonical_json(variant.specialization)}\nused by: "
                  + "\n  ".join(sorted(variant.used_by)))
        launchers.append((op, vid, _comment(header) + "\n" + launcher))

    ops = [spec.name for spec in specs]
    op_info = {spec.name: {"exact_keys": list(spec.exact_keys), "key_weights": dict(spec.key_weights),
                           "reduction_keys": list(spec.reduction_keys),
                           "shape_keys": sorted({k for s in spec.shapes for k in s})} for spec in specs}
    header = (f'"""Generated by `python -m build_tools generate`; source: kernels_src/{family}.py; do not edit.\n\n'
              f"Ops: {', '.join(ops)}.\n"
              f"Variants: {len(launchers)} (each launcher's comment names its config and the table "
              'entries using it).\n"""\n' + "\n".join(ALLOWED_IMPORTS + (GLUON_IMPORTS if gluon else ())))
    lines = [header, f"OP_INFO = {json.dumps(op_info, sort_keys=True)}"]
    lines += [source.strip("\n") for _, source in sorted(helpers.items())]
    lines += [text.strip("\n") for _, text in sorted(combines.items())]
    lines += ["\n\n".join(body for _, body in sorted(kernels.items()))] if kernels else []
    lines += ["\n\n\n".join(text for _, _, text in launchers)] if launchers else []
    table = ["VARIANTS = {"]
    for op in ops:
        table.append(f"    {op!r}: {{")
        table += [f"        {vid!r}: {name}__{vid}," for name, vid, _ in launchers if name == op]
        table.append("    },")
    table.append("}")
    lines.append("\n".join(table))
    # the launchers a direct call may record and replay natively (build_tools/dsl/replayable.py)
    lines.append("\n".join(["REPLAYABLE = frozenset({", *(f"    {name!r}," for name in sorted(replayable)), "})"]))
    return _tidy("\n\n\n".join(lines))


def _tidy(text: str) -> str:
    """Collapse runs of blank lines to two and end with one newline."""
    return re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"


def render_all(table_dir: Path = TABLE_DIR) -> dict:
    """file name -> text of every module `generate` writes."""
    families = op_families()
    variants = collect_variants(families, table_entries(table_dir))
    index = {spec.name: family for family, specs in families.items() for spec in specs}
    files = {"__init__.py": PACKAGE_DOC + "\n# op -> the module of its family (the runtime imports a family on its first use)\n"
             + f"FAMILIES = {json.dumps(index, sort_keys=True, indent=4)}\n"}
    for family, specs in families.items():
        files[f"{family}.py"] = render_family(family, specs, variants[family])
    return files


def stale_files(files: dict, out_dir: Path = OUT_DIR) -> list:
    """Names of files that differ from `files`, are missing, or should not exist."""
    present = {p.name for p in out_dir.glob("*.py")} if out_dir.is_dir() else set()
    stale = [name for name, text in files.items()
             if not (out_dir / name).is_file() or (out_dir / name).read_text() != text]
    return sorted(stale + [name for name in present - files.keys()])


def write(files: dict, out_dir: Path = OUT_DIR) -> list:
    """Write changed files, remove modules no family produces; returns the names touched."""
    out_dir.mkdir(parents=True, exist_ok=True)
    touched = stale_files(files, out_dir)
    for name in touched:
        if name in files:
            (out_dir / name).write_text(files[name])
        else:
            (out_dir / name).unlink()
    return touched


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools generate", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed files are stale")
    parser.add_argument("--tables", type=Path, default=TABLE_DIR, help="folder of tuned tables")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    files = render_all(args.tables)
    if args.check:
        stale = stale_files(files, args.out)
        if stale:
            print("stale generated files (run `python -m build_tools generate`): " + ", ".join(stale),
                  file=sys.stderr)
            return 1
        print(f"{len(files)} generated files are up to date")
        return 0
    touched = write(files, args.out)
    print(f"wrote {len(touched)} of {len(files)} files in {args.out}" + (": " + ", ".join(touched) if touched else ""))
    return 0
