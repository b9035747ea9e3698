"""Variant identity shared by the generator, the dispatcher and the autotuner (docs/CONTRACTS.md).

A generated variant is named by the op, its config and the specialization it was compiled for;
`variant_id` hashes the canonical JSON of those three so every side derives the same name.
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


def canonical_json(value) -> str:
    """Compact JSON with sorted keys: the text that variant ids and table diffs are built from."""
    return json.dumps(to_plain(value), sort_keys=True, separators=(",", ":"))


def variant_id(op: str, config: Mapping, specialization: Mapping) -> str:
    """First 12 hex digits of sha1 over the canonical JSON of (op, config, specialization)."""
    text = canonical_json({"op": op, "config": config, "specialization": specialization})
    return hashlib.sha1(text.encode()).hexdigest()[:12]
