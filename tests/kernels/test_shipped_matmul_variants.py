"""Every shipped matmul, linear and bmm variant, through its generated launcher, at shapes other
than the one it was tuned at: a single row (a decode step) with a reduction length whose rows are
not 16-byte aligned (the variants' TMA loads fall back to pointer loads), and a few hundred rows
with aligned rows (the TMA path), sizes no tile divides, split-K partial sums included. Outputs come
from poisoned allocations and are checked against the op's float64 reference. The dispatcher sends
a variant every shape nearest its entry, so a variant must be right away from that entry's shape.

GPU only: the tables' variants are tuned for tensor cores (bf16/fp16 dots, TMA, large tiles), which
the CPU interpreter runs slowly or not at all; tests/kernels/test_matmul.py runs the kernels on the
CPU under their default and random configs."""
import pytest
import torch

import kernels_src
from helion_kernels._dispatch import DISPATCHER
from kernel_check import assert_close, poisoned_allocations, shipped_entries

OPS = ("matmul", "linear", "bmm")
SHAPES = ({"M": 1, "N": 1000, "K": 777}, {"M": 300, "N": 1000, "K": 1032})

pytestmark = pytest.mark.gpu


def shipped_variants() -> list:
    return sorted({(e.op, e.dtype, e.variant) for e in shipped_entries(OPS)})


def test_every_matmul_op_ships_variants():
    assert {op for op, *_ in shipped_variants()} == set(OPS)


@pytest.mark.parametrize("op, dtype, variant", shipped_variants())
def test_variant_is_right_away_from_its_tuned_shape(device, op, dtype, variant):
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    launcher = DISPATCHER.registry.launchers(op)[variant]
    torch_dtype = getattr(torch, dtype)
    for seed, shape in enumerate(SHAPES):
        shape = {"B": 3, **shape} if op == "bmm" else shape
        args = spec.make_inputs(shape, torch_dtype, device, seed)
        with poisoned_allocations():
            outputs = launcher(*args)
        assert_close(outputs, spec.reference(*args), spec.tolerance(torch_dtype), f"{op} {variant} {shape}")
