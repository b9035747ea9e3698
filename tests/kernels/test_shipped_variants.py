"""Every shipped variant of the row ops, through its generated launcher, at shapes other than the
one it was tuned at: the dispatcher sends a variant every shape nearest its entry, so a variant must
not depend on the example its code was generated from (a condition on a size folded to the
example's value did, 2026-12-02). One row (a decode step) and 37 rows (several row blocks, partial
sums) at a width no block divides, with poisoned output allocations, against the op's float64
reference. Each variant's twins compiled for other argument dtypes (OpSpec.dtype_variants) run
too, their outputs in PyTorch's dtypes. The variants that compile their reduction sizes in run only at their own widths (test_static_variants.py)."""
import pytest

from kernel_check import check_shipped_variant, shipped_entries, variants_of

ROW_OPS = ("rms_norm_fwd", "rms_norm_bwd", "rms_norm_noweight_fwd", "rms_norm_noweight_bwd", "softmax_fwd", "softmax_bwd")
SHAPES = {"cpu": ({"M": 1, "N": 300}, {"M": 37, "N": 300}), "cuda": ({"M": 1, "N": 4099}, {"M": 1037, "N": 4099})}


def dynamic_entries() -> list:
    return [e for e in shipped_entries(ROW_OPS) if not e.twin]


def test_every_row_op_ships_dynamic_variants():
    assert {e.op for e in dynamic_entries()} == set(ROW_OPS)


def test_row_ops_ship_their_configs_for_mixed_dtypes():
    """Softmax's float32 output of half rows and its half gradient; RMSNorm's float32 output,
    weight and gradient beside half rows (OpSpec.dtype_variants)."""
    found = {(op, dtype, key) for op, dtype, _, key in variants_of(dynamic_entries()) if key}
    assert found >= {
        ("softmax_fwd", "bfloat16", "out_dtype=float32"), ("softmax_bwd", "float32", "grad_in_dtype=bfloat16"),
        ("rms_norm_fwd", "bfloat16", "out_dtype=float32,weight=float32"), ("rms_norm_fwd", "bfloat16", "weight=float32"),
        ("rms_norm_bwd", "bfloat16", "grad_out=float32,weight=float32"), ("rms_norm_bwd", "float16", "grad_out=float32"),
        ("rms_norm_noweight_fwd", "bfloat16", "out_dtype=float32"), ("rms_norm_noweight_bwd", "bfloat16", "grad_out=float32")}


@pytest.mark.parametrize("op, dtype, variant, dtypes", variants_of(dynamic_entries()))
def test_variant_is_right_away_from_its_tuned_shape(device, op, dtype, variant, dtypes):
    for seed, shape in enumerate(SHAPES[device]):
        check_shipped_variant(op, dtype, variant, dtypes, shape, device, seed)
