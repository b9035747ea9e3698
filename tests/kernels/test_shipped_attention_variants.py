"""Every shipped attention variant (forward and backward), through its generated launcher, at a
shape other than the one it was tuned at: lengths no tile divides, queries and keys of different
lengths where the entry is non-causal, grouped heads where the entry groups them. Outputs come from
poisoned allocations and are checked against the op's float64 reference. The dispatcher sends a
variant every shape nearest its entry, so a variant must be right away from that entry's shape.

GPU only: many of these variants are Gluon kernels, which Triton's interpreter cannot run, and the
interpreter has no bf16 dot; tests/kernels/test_attention.py runs the kernels on the CPU under
their default and random configs."""
import pytest
import torch

import kernels_src
from helion_kernels._dispatch import DISPATCHER
from kernel_check import assert_close, poisoned_allocations, shipped_entries

OPS = ("attention_fwd", "attention_bwd")

pytestmark = pytest.mark.gpu


def shipped_variants() -> list:
    """(op, dtype, variant, head dim, causal, grouped) of every attention entry of every table."""
    return sorted({(e.op, e.dtype, e.variant, e.shape["D"], e.shape["causal"], e.shape["H"] != e.shape["Hkv"])
                   for e in shipped_entries(OPS)})


def ragged_shape(head_dim: int, causal: bool, grouped: bool) -> dict:
    return {"B": 2, "H": 4, "Hkv": 2 if grouped else 4, "Sq": 1000, "Sk": 1000 if causal else 777,
            "D": head_dim, "causal": causal}


def test_every_attention_op_ships_variants():
    assert {op for op, *_ in shipped_variants()} == set(OPS)


@pytest.mark.parametrize("op, dtype, variant, head_dim, causal, grouped", shipped_variants())
def test_variant_is_right_away_from_its_tuned_shape(device, op, dtype, variant, head_dim, causal, grouped):
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    launcher = DISPATCHER.registry.launchers(op)[variant]
    torch_dtype = getattr(torch, dtype)
    shape = ragged_shape(head_dim, causal, grouped)
    args = spec.make_inputs(shape, torch_dtype, device, 11)
    with poisoned_allocations():
        outputs = launcher(*args)
    assert_close(outputs, spec.reference(*args), spec.tolerance(torch_dtype), f"{op} {variant} {shape}")
