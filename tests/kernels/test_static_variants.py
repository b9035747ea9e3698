"""The shipped variants that pass reduction extents as constexprs (config `static_reduction_sizes`).
Triton compiles such a variant once per extent, and the launchers keep each compiled kernel keyed by
its constexprs; a launch that reused the kernel of another width would read and write the wrong
columns. Every such variant of the tuned tables runs through its generated launcher at several
widths in a row (the last one again after another), with poisoned output allocations, against the
op's float64 reference."""
import json
from pathlib import Path

import pytest
import torch

import kernels_src
from helion_kernels._dispatch import DISPATCHER
from kernel_check import assert_close, poisoned_allocations

TABLES = Path(__file__).resolve().parents[2] / "tuned_configs"
ROWS = {"cpu": 3, "cuda": 37}
WIDTHS = {"cpu": (300, 77, 1, 300), "cuda": (32000, 4097, 1, 32000)}


def static_variants() -> list:
    found = set()
    for path in sorted(TABLES.glob("*.json")):
        for entry in json.loads(path.read_text())["entries"]:
            if entry["config"].get("static_reduction_sizes"):
                found.add((entry["op"], entry["dtype"], entry["variant"]))
    return sorted(found)


def test_the_tables_ship_static_variants():
    assert {op for op, _, _ in static_variants()} >= {"softmax_fwd", "softmax_bwd"}


@pytest.mark.parametrize("op, dtype, variant", static_variants())
def test_static_variant_is_right_at_every_width(device, op, dtype, variant):
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    launcher = DISPATCHER.registry.launchers(op)[variant]
    torch_dtype = getattr(torch, dtype)
    for seed, width in enumerate(WIDTHS[device]):
        args = spec.make_inputs({"M": ROWS[device], "N": width}, torch_dtype, device, seed)
        with poisoned_allocations():
            outputs = launcher(*args)
        assert_close(outputs, spec.reference(*args), spec.tolerance(torch_dtype), f"{op} {variant} width {width}")
