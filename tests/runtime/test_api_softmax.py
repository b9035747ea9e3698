"""hk.softmax against torch.nn.functional.softmax (float64 reference), values and gradients."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels._variant import dtype_name
from runtime_helpers import assert_close, double_leaf, grads, randn, uses_kernels_here

# size-1 rows, odd sizes, a row longer than the looped-reduction chunk, leading batch dims.
CASES = [((1, 1), -1), ((37, 19), -1), ((5, 9000), 1), ((2, 3, 70), -1), ((6, 7, 5), 0), ((4, 9, 3), 1)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape, dim", CASES)
def test_softmax_matches_torch(device, poison, dtype, shape, dim):
    x = randn(*shape, dtype=dtype, device=device, requires_grad=True) * 3
    x.retain_grad()
    assert hk.explain(hk.softmax, x, dim).uses_kernels == uses_kernels_here(device)
    out = hk.softmax(x, dim)
    x64 = double_leaf(x)
    expected = F.softmax(x64, dim)
    assert_close(out, expected, dtype)
    assert out.is_contiguous()
    grad_out = randn(*shape, dtype=dtype, device=device)
    (dx,), (dx64,) = grads(out, (x,), grad_out), grads(expected, (x64,), grad_out.double())
    assert_close(dx, dx64, dtype)


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape, dim", CASES)
def test_float32_softmax_of_half_rows_is_one_kernel_each_way(device, poison, half, shape, dim):
    """dtype=float32 on half rows (autocast's softmax on CUDA): the forward reads the half rows and
    writes float32 (no rounding through the half dtype: float32 tolerances), the backward takes the
    float32 gradient to the half input's dtype, each one launch keyed by its input dtype."""
    x = randn(*shape, dtype=half, device=device, requires_grad=True) * 3
    explained = hk.explain(hk.softmax, x, dim, dtype=torch.float32)
    assert explained.uses_kernels == uses_kernels_here(device)
    (forward,), (backward,) = explained.forward, explained.backward
    assert (forward.dtype, forward.dtypes, backward.dtype, backward.dtypes) == (
        dtype_name(half), "out_dtype=float32", "float32", f"grad_in_dtype={dtype_name(half)}")
    assert forward.uses_kernel == backward.uses_kernel == uses_kernels_here(device)
    out = hk.softmax(x, dim, dtype=torch.float32)
    x64 = double_leaf(x)
    expected = F.softmax(x64, dim)
    assert_close(out, expected, torch.float32)
    grad_out = randn(*shape, device=device)
    (dx,), (dx64,) = grads(out, (x,), grad_out), grads(expected, (x64,), grad_out.double())
    assert_close(dx, dx64, half)


def test_dtype_argument_casts_first(device, poison):
    """Other dtypes cast first, as PyTorch does: float32 rows with dtype float16 are rounded to
    float16, then normalized."""
    x = randn(3, 8, device=device) * 3
    out16 = hk.softmax(x, dim=1, dtype=torch.float16)
    assert_close(out16, F.softmax(x.half().double(), 1), torch.float16)


def test_non_contiguous_input(device, poison):
    x = randn(30, 40, device=device).t()[::3]
    assert_close(hk.softmax(x, -1), F.softmax(x.double(), -1), torch.float32)


def test_fallbacks(device):
    x64 = randn(3, 4, dtype=torch.float64, device=device)
    torch.testing.assert_close(hk.softmax(x64), F.softmax(x64, -1))
    assert "float64" in str(hk.explain(hk.softmax, x64))
    scalar = randn(1, device=device)[0]
    torch.testing.assert_close(hk.softmax(scalar, 0), F.softmax(scalar, 0))
    empty = torch.empty(3, 0, device=device)
    assert hk.softmax(empty).shape == (3, 0)
    as_int = hk.softmax(torch.arange(6, device=device).view(2, 3), 1, dtype=torch.float32)
    torch.testing.assert_close(as_int, F.softmax(torch.arange(6.0, device=device).view(2, 3), 1))


@pytest.mark.parametrize("make_args", [lambda x: (x, 2), lambda x: (x, -3), lambda x: (x.long(), 1),
                                       lambda x: ("x", 1), lambda x: (x, 1.5)])
def test_invalid_inputs_raise_like_pytorch(device, make_args):
    args = make_args(randn(3, 4, device=device))
    with pytest.raises(Exception) as theirs:
        F.softmax(*args)
    with pytest.raises(type(theirs.value)):
        hk.softmax(*args)
