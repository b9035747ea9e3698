"""helion_kernels._interpreter: `tl.reduce` with a combine function of one's own, under Triton's
interpreter, combines adjacent pairs of the reduced axis as blocks. Raw Triton kernels here (the DSL emits
such reductions for its NaN-propagating max): results against PyTorch, for every axis, kept dims,
tuple-valued functions and one that is associative but not commutative; a function written for
scalars still runs (the interpreter's own one-element-at-a-time path)."""
import os

import pytest
import torch
import triton
import triton.language as tl

import helion_kernels  # noqa: F401 - applies the interpreter's corrections

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter corrections")

M, N = 16, 64


@triton.jit
def _max_propagating_nan(a, b):
    return tl.where((a != a) | (a > b), a, b)


@triton.jit
def _last_nonzero(a, b):
    return tl.where(b != 0, b, a)


@triton.jit
def _max_and_first_index(a, i, b, j):
    take_b = (b > a) | ((b == a) & (j < i))
    return tl.where(take_b, b, a), tl.where(take_b, j, i)


@triton.jit
def _max_of_scalars(a, b):
    if a > b:
        return a
    return b


@triton.jit
def _store_reduced(ptr, r, AXIS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    if AXIS is None:
        tl.store(ptr, r)
    else:
        tl.store(ptr + tl.arange(0, N if AXIS == 0 else M), r)


@triton.jit
def _reduce_kernel(x, out, idx, KIND: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    v = tl.load(x + rows * N + cols)
    if KIND == 0:
        r = tl.reduce(v, AXIS, _max_propagating_nan)
    elif KIND == 1:
        r = tl.reduce(v, AXIS, _last_nonzero)
    else:
        index = (rows * N + cols) if AXIS is None else (rows if AXIS == 0 else cols) + 0 * (rows + cols)
        r, i = tl.reduce((v, index), AXIS, _max_and_first_index)
        _store_reduced(idx, i, AXIS, M, N)
    _store_reduced(out, r, AXIS, M, N)


@triton.jit
def _keep_dims_kernel(x, out, M: tl.constexpr, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    r = tl.reduce(v, 1, _max_propagating_nan, keep_dims=True)  # (M, 1)
    tl.store(out + tl.arange(0, M)[:, None] + tl.zeros([M, 1], tl.int32), r)


@triton.jit
def _scalar_combine_kernel(x, out, N: tl.constexpr):
    tl.store(out, tl.reduce(tl.load(x + tl.arange(0, N)), 0, _max_of_scalars))


def _run(kind, axis, x):
    size = 1 if axis is None else (N if axis == 0 else M)
    out = torch.full((size,), 12345.0)
    idx = torch.full((size,), -7, dtype=torch.int32)
    _reduce_kernel[(1,)](x, out, idx, kind, axis, M, N)
    return (out[0], idx[0]) if axis is None else (out, idx)


def _reference_max(x, axis):
    values = x.flatten() if axis is None else x
    dim = 0 if axis is None else axis
    return torch.where(values.isnan().any(dim), torch.nan, values.nan_to_num(nan=-torch.inf).amax(dim))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_nan_propagating_max(axis):
    x = torch.randn(M, N)
    x[3, 5] = float("nan")
    out, _ = _run(0, axis, x)
    torch.testing.assert_close(out, _reference_max(x, axis), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_a_combine_that_is_not_commutative_keeps_the_axis_order(axis):
    x = torch.randn(M, N) * (torch.rand(M, N) < 0.3)
    out, _ = _run(1, axis, x)
    values = x.flatten()[None, :] if axis is None else (x.T if axis == 0 else x)
    nonzero = values != 0
    last = torch.where(nonzero.any(1), (nonzero * torch.arange(values.size(1))).argmax(1), 0)
    expected = values.gather(1, last[:, None]).squeeze(1)
    torch.testing.assert_close(out, expected[0] if axis is None else expected, rtol=0, atol=0)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_a_tuple_valued_combine(axis):
    x = torch.randint(-3, 3, (M, N)).float()  # ties: the first index wins
    out, idx = _run(2, axis, x)
    values = x.flatten() if axis is None else x
    dim = 0 if axis is None else axis
    torch.testing.assert_close(out, values.amax(dim), rtol=0, atol=0)
    first = (values == values.amax(dim, keepdim=True)).int().argmax(dim)
    torch.testing.assert_close(idx, first.int(), rtol=0, atol=0)


def test_kept_dims():
    x = torch.randn(M, N)
    out = torch.full((M,), 12345.0)
    _keep_dims_kernel[(1,)](x, out, M, N)
    torch.testing.assert_close(out, x.amax(1), rtol=0, atol=0)


def test_a_combine_written_for_scalars_still_runs():
    x = torch.randn(32)
    out = torch.full((1,), 12345.0)
    _scalar_combine_kernel[(1,)](x, out, 32)
    assert out[0] == x.max()


def test_which_combine_functions_take_blocks():
    from helion_kernels._interpreter import _straight_line

    assert _straight_line(_max_propagating_nan.fn) and _straight_line(_max_and_first_index.fn)
    assert not _straight_line(_max_of_scalars.fn)
