"""The OpSpec lists of kernels_src: unique names, consistent shape keys, seeded inputs, costs,
and baselines (plain PyTorch at the input dtype) that agree with the float64 references."""
import pytest
import torch

import kernels_src
from kernel_check import as_tuple

OPS = kernels_src.ALL_OPS


def _shrunk(shape: dict) -> dict:
    """The suite shape with every size cut to at most 24 (head dims kept), for a CPU run."""
    return {key: value if key == "D" or isinstance(value, bool) or not isinstance(value, int) else min(value, 24)
            for key, value in shape.items()}


def test_names_are_unique_and_cover_the_library():
    names = [op.name for op in OPS]
    assert len(names) == len(set(names))
    assert {"rms_norm_fwd", "rms_norm_bwd", "softmax_fwd", "softmax_bwd", "matmul", "bmm", "linear",
            "attention_fwd", "attention_bwd"} <= set(names)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_suite_is_consistent(op):
    assert 1 <= len(op.shapes) <= 10
    keys = set(op.shapes[0])
    assert all(set(shape) == keys for shape in op.shapes)
    assert set(op.exact_keys) <= keys
    for dtype in op.dtypes:
        rtol, atol = op.tolerance(dtype)
        # atol up to 2e-2: the bf16 attention backward, whose dS rounding (FlashAttention's and
        # cuDNN's) leaves rare cancelling gradient elements 1.5e-2 off (kernels_src.attention)
        assert 0 < rtol <= 1e-2 and 0 <= atol <= 2e-2
        for shape in op.shapes:
            flops, moved = op.cost(shape, dtype)
            assert flops > 0 and moved > 0


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_inputs_are_seeded_fresh_and_baseline_matches_reference(op, device):
    shape = _shrunk(op.shapes[0])
    dtype = op.dtypes[0]
    args = op.make_inputs(shape, dtype, device, 5)
    again = op.make_inputs(shape, dtype, device, 5)
    other = op.make_inputs(shape, dtype, device, 6)
    tensors = [(a, b, c) for a, b, c in zip(args, again, other) if isinstance(a, torch.Tensor)]
    assert tensors
    for a, b, c in tensors:
        assert torch.equal(a, b) and not torch.equal(a, c)
        assert torch.count_nonzero(a) == a.numel()
    expected = as_tuple(op.reference(*args))
    baseline = as_tuple(op.baseline(*args))
    rtol, atol = op.tolerance(dtype)
    for got, want in zip(baseline, expected):
        torch.testing.assert_close(got.to(torch.float64), want, rtol=max(rtol, 1e-2), atol=max(atol, 1e-2))
