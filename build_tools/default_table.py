"""`python -m build_tools default-table [--check]`: write `tuned_configs/default.json`.

The default table holds documented heuristic configs, used on architectures without a tuned table
and for ops/dtypes/specializations a tuned table lacks. Each entry is the kernel's
`config_spec.default_config()` with the overrides of one rule below, normalized by the config
spec, at a representative shape; the dispatcher's nearest-shape choice then splits sizes between
the entries (e.g. row lengths below ~8192 pick the persistent-reduction entry of a row op).

Rules, by the shape keys of an op's tuning suite:
- rows {M, N} (norms, softmax): one row per program; rows up to 4096 elements are reduced in
  registers (persistent reduction) with 4 warps (N <= 1024) or 8; longer rows loop over chunks of
  4096 elements (`reduction_loops`) with 16 warps.
- matrices {M, N, K} and batches {B, M, N, K}: 64x64x32 tiles with 4 warps and 3 stages for
  skinny (decode-like) products, 128x128x32 tiles with 8 warps and 3 stages for large ones.
- attention {.., D, causal}: one entry per head dim D in 16..256 and causal flag; query/key tiles
  of 64 (128x64 for D <= 64 is left to tuning), 4 warps up to D = 64, 8 above.
Overrides the config spec rejects are dropped one by one (the entry says which), never guessed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from build_tools.generate import TABLE_DIR, _dtype, bind, op_families
from helion_kernels._variant import to_plain, variant_id

DEFAULT_PATH = TABLE_DIR / "default.json"
PERSISTENT_MAX_N = 4096
LOOP_CHUNK = 4096
ROW_SIZES = (1024, 4096, 16384, 131072)
HEAD_DIMS = (16, 32, 64, 128, 256)


def _row_rule(n: int) -> dict:
    overrides = {"block_sizes": [1], "num_warps": 4 if n <= 1024 else 8 if n <= PERSISTENT_MAX_N else 16}
    overrides["reduction_loops"] = [None] if n <= PERSISTENT_MAX_N else [LOOP_CHUNK]
    return overrides


def _matrix_rule(large: bool) -> dict:
    tiles = [128, 128, 32] if large else [64, 64, 32]
    return {"block_sizes": tiles, "num_warps": 8 if large else 4, "num_stages": 3}


def _attention_rule(head_dim: int) -> dict:
    return {"block_sizes": [64, 64], "num_warps": 4 if head_dim <= 64 else 8, "num_stages": 2}


def representative_points(keys: set) -> list:
    """(shape, overrides, rule name) for an op whose tuning suite has shape keys `keys`."""
    if keys == {"M", "N"}:
        return [({"M": 4096, "N": n}, _row_rule(n), "rows") for n in ROW_SIZES]
    if keys == {"M", "N", "K"}:
        return [({"M": 64, "N": 4096, "K": 4096}, _matrix_rule(False), "skinny matrix"),
                ({"M": 4096, "N": 4096, "K": 4096}, _matrix_rule(True), "large matrix")]
    if keys == {"B", "M", "N", "K"}:
        return [({"B": 64, "M": 64, "N": 128, "K": 512}, _matrix_rule(False), "small batched matrix"),
                ({"B": 16, "M": 2048, "N": 2048, "K": 2048}, _matrix_rule(True), "large batched matrix")]
    if "D" in keys:
        points = []
        for head_dim in HEAD_DIMS:
            for causal in (False, True):
                shape = {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": head_dim, "causal": causal}
                points.append(({k: v for k, v in shape.items() if k in keys}, _attention_rule(head_dim),
                               "attention"))
        return points
    raise ValueError(f"no default rule for shape keys {sorted(keys)}")


def _fit(value, current):
    """Reshape a list override to the length of the default's list (repeating its last element)."""
    if isinstance(current, (list, tuple)) and isinstance(value, list):
        return [value[min(i, len(value) - 1)] for i in range(len(current))] if current else []
    return value


def heuristic_config(config_spec, overrides: dict) -> tuple:
    """(normalized config dict, names of overrides the config spec rejected)."""
    from build_tools.dsl import Config, exc

    base = to_plain(config_spec.default_config())
    config, rejected = dict(base), []
    for name, value in overrides.items():
        if name not in base:
            rejected.append(name)
            continue
        trial = {**config, name: _fit(value, base[name])}
        try:
            config_spec.normalize(Config(trial))
        except exc.InvalidConfig:
            rejected.append(name)
            continue
        config = trial
    return to_plain(config_spec.normalize(Config(config))), rejected


def build_table() -> dict:
    entries = []
    for specs in op_families().values():
        for spec in specs:
            keys = {k for shape in spec.shapes for k in shape}
            for dtype in spec.dtypes:
                dtype_name = str(dtype).removeprefix("torch.")
                for shape, overrides, rule in representative_points(keys):
                    bound = bind(spec, shape, dtype)
                    config, rejected = heuristic_config(bound.config_spec, overrides)
                    specialization = to_plain(bound.specialization_key())
                    entry = {"op": spec.name, "dtype": dtype_name, "shape": shape, "rule": rule,
                             "specialization": specialization, "config": config,
                             "variant": variant_id(spec.name, config, specialization)}
                    if rejected:
                        entry["rejected_overrides"] = rejected
                    entries.append(entry)
    return {"schema": 1, "arch": "default", "device_name": None,
            "generated_by": "python -m build_tools default-table (rules: build_tools/default_table.py)",
            "entries": entries}


def render(table: dict) -> str:
    return json.dumps(table, indent=1) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools default-table", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if default.json is stale")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    text = render(build_table())
    if args.check:
        if not args.out.is_file() or args.out.read_text() != text:
            print(f"{args.out} is stale (run `python -m build_tools default-table`)", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out} ({text.count(chr(10))} lines)")
    return 0
