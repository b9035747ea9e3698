"""Variant identity shared by the generator, the dispatcher and the autotuner (docs/CONTRACTS.md).

A generated variant is named by the op, its config and the specialization it was compiled for;
`variant_id` hashes the canonical JSON of those three so every side derives the same name.
`twin_config` names the second variant a table entry may need (its dynamic twin), on both sides;
`dtype_name` writes a dtype as both sides name it, `dtypes_key` a variant's argument dtypes that
differ from its entry's (OpSpec.dtype_variants), and `dtype_variant_id` the variant an entry's config
is compiled as for them.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


def to_plain(value):
    """Turn Mappings/tuples into dicts/lists so configs and specializations serialize alike."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def dtype_name(dtype) -> str:
    """A torch dtype's name as tables and specializations write it ("bfloat16")."""
    return str(dtype).removeprefix("torch.")


def dtypes_key(overrides) -> str:
    """The name of argument dtype overrides ({arg: dtype} or (arg, dtype) pairs) as tables'
    `dtype_configs` and `explain` write it: "out_dtype=float32,weight=float32"."""
    pairs = overrides.items() if isinstance(overrides, Mapping) else overrides
    return ",".join(f"{arg}={dtype_name(dtype)}" for arg, dtype in sorted(pairs, key=lambda pair: pair[0]))


def dtype_names_of_key(key: str) -> dict:
    """{argument: dtype name} of a dtypes key (`dtypes_key`'s inverse; "" -> {})."""
    return dict(pair.split("=") for pair in key.split(",")) if key else {}


def canonical_json(value) -> str:
    """Compact JSON with sorted keys: the text that variant ids and table diffs are built from."""
    return json.dumps(to_plain(value), sort_keys=True, separators=(",", ":"))


def variant_id(op: str, config: Mapping, specialization: Mapping) -> str:
    """First 12 hex digits of sha1 over the canonical JSON of (op, config, specialization)."""
    text = canonical_json({"op": op, "config": config, "specialization": specialization})
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def twin_config(entry: Mapping) -> dict | None:
    """The config a tuned table entry runs at reduction sizes other than its shape's (docs/CONTRACTS.md):
    None unless its config compiles those sizes in (`static_reduction_sizes`), which Triton does once
    per size; then the entry's `dynamic_config` (the fastest config without the flag that the tuner
    or a probe measured beside it), else its own config with the flag off."""
    config = entry["config"]
    if not config.get("static_reduction_sizes"):
        return None
    return dict(entry.get("dynamic_config") or {**config, "static_reduction_sizes": False})


def with_dtypes(specialization: dict, dtypes: Mapping) -> dict:
    """`specialization` with the arguments named in `dtypes` ({arg: dtype or its name}) in those
    dtypes (a tensor's entry keeps its other facts; a dtype argument's is the dtype's name)."""
    changed = dict(specialization)
    for name, dtype in dtypes.items():
        fact = specialization.get(name)
        changed[name] = {**fact, "dtype": dtype_name(dtype)} if isinstance(fact, dict) else dtype_name(dtype)
    return changed


def dtype_variant_id(op: str, config: dict, specialization: dict, key: str, overrides: dict) -> str:
    """The variant of an entry's `config` (or its twin's) compiled for the argument dtypes `key`
    names (`dtypes_key`), changed by `overrides` (the entry's `dtype_configs` for `key`): derived
    from the entry itself, since two entries of one config may record different overrides."""
    return variant_id(op, {**config, **overrides}, with_dtypes(specialization, dtype_names_of_key(key)))
