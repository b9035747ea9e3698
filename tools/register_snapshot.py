"""Register snapshot: what ptxas allocates for every shipped kernel, without a GPU.

    python3 tools/register_snapshot.py write OUT.json [--tables T,T] [--ops OP,OP]
    python3 tools/register_snapshot.py check SNAPSHOT.json [--tables T,T] [--ops OP,OP]

Cross-compiles (build_tools/cross_compile: Triton's passes and its bundled ptxas, for sm_90) each
entry of the tuned tables (default: every sm_*.json under tuned_configs/) at its shape, dtype and
config, on shape-only (meta) inputs, and records each launched kernel's registers and spill bytes
(about 1 s an entry, 8 s for a Gluon attention backward). `check` compiles the same
entries of a snapshot again and prints the kernels whose registers or spills changed; it exits 1
when any grew. A change of a kernel source can move a tuned entry's allocation without changing
its config: the RMSNorm backward's lone-program dweight store (2026-12-02) took the H100's
16384x4096 entry from 240 to 255 registers and 7.5% of its speed, unseen until a report ran three
days later. Kernels are compared in launch order; an entry that fails to compile records the error.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

FIELDS = ("registers", "spill_stores", "spill_loads")


def entry_key(table: str, entry: dict) -> str:
    return f"{table} {entry['op']} {entry['dtype']} {json.dumps(entry['shape'], sort_keys=True)}"


def kernel_facts(entry: dict) -> list[dict] | str:
    """[{registers, spill_stores, spill_loads} per launched kernel] of `entry`, or the error."""
    import kernels_src
    from build_tools.cross_compile import CrossCompileError, cross_compile

    from build_tools.opspec import dtypes_from_key

    spec = next(s for s in kernels_src.ALL_OPS if s.name == entry["op"])
    args = spec.make_inputs(entry["shape"], getattr(torch, entry["dtype"]), "meta", 0)  # shapes only: no data made
    args = spec.with_dtypes(tuple(args), dtypes_from_key(entry.get("dtypes", "")))  # a config probe's dtypes job
    spec.kernel.reset()
    try:
        compiled = cross_compile(spec.kernel.bind(args), args, entry["config"])
    except CrossCompileError as error:
        return f"error: {str(error).splitlines()[0][:300]}"
    return [{field: c.ptxas_info()[field] for field in FIELDS} for c in compiled]


def snapshot(tables: list[Path], ops: set | None) -> dict:
    out = {}
    for path in tables:
        for entry in json.loads(path.read_text())["entries"]:
            if ops is None or entry["op"] in ops:
                key = entry_key(path.name, entry)
                out[key] = kernel_facts(entry)
                print(key, out[key], flush=True)
    return out


def changes(before: dict, after: dict) -> tuple[list[str], bool]:
    """Lines describing each kernel whose facts differ between the snapshots (entries in both), and
    whether any registers or spills grew."""
    lines, grew = [], False
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        if old == new:
            continue
        if isinstance(old, str) or isinstance(new, str) or len(old) != len(new):
            lines.append(f"{key}: {old} -> {new}")
            grew = grew or isinstance(new, str)
            continue
        for index, (a, b) in enumerate(zip(old, new)):
            if a != b:
                lines.append(f"{key} kernel {index}: " + ", ".join(f"{f} {a[f]} -> {b[f]}" for f in FIELDS if a[f] != b[f]))
                grew = grew or any(b[f] > a[f] for f in FIELDS)
    return lines, grew


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("verb", choices=("write", "check"))
    parser.add_argument("path", type=Path)
    parser.add_argument("--tables", help="table files, paths or names under tuned_configs/ (comma-separated)")
    parser.add_argument("--ops", help="only these ops (comma-separated)")
    args = parser.parse_args(argv)
    tables = ([Path(name) if Path(name).exists() else ROOT / "tuned_configs" / name for name in args.tables.split(",")]
              if args.tables else sorted((ROOT / "tuned_configs").glob("sm_*.json")))
    ops = set(args.ops.split(",")) if args.ops else None
    if args.verb == "write":
        args.path.write_text(json.dumps(snapshot(tables, ops), indent=1) + "\n")
        return
    before = json.loads(args.path.read_text())
    names = {key.split(" ")[0] for key in before}
    after = snapshot([path for path in tables if path.name in names], ops)
    lines, grew = changes(before, after)
    print("\n".join(lines) or "no kernel's registers or spills changed")
    if grew:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
