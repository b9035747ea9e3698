"""helion_kernels._interpreter: `tl.reduce` and `tl.associative_scan` with a combine function of
one's own, under Triton's interpreter, combine elements of the axis as blocks. Raw Triton kernels
here (the DSL emits such reductions for its NaN-propagating max): results against PyTorch or an
element-by-element loop, for every axis, kept dims, reversed scans, tuple-valued functions and one
that is associative but not commutative; a function written for scalars still runs (the
interpreter's own one-element-at-a-time path)."""
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


@triton.jit
def _scan_kernel(x, out, idx, KIND: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr, M: tl.constexpr,
                 N: tl.constexpr):
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    v = tl.load(x + offsets)
    if KIND == 0:
        r = tl.associative_scan(v, AXIS, _max_propagating_nan, reverse=REVERSE)
    elif KIND == 1:
        r = tl.associative_scan(v, AXIS, _last_nonzero, reverse=REVERSE)
    elif KIND == 2:
        r, i = tl.associative_scan((v, offsets), AXIS, _max_and_first_index, reverse=REVERSE)
        tl.store(idx + offsets, i)
    else:
        r = tl.associative_scan(v, AXIS, _max_of_scalars, reverse=REVERSE)
    tl.store(out + offsets, r)


def _scan_by_loop(values, combine, axis, reverse):
    """The inclusive scan of each row (axis 1) or column (axis 0) of `values` (lists of floats or
    tuples), one element at a time."""
    lines = [list(line) for line in (zip(*values) if axis == 0 else values)]
    out = []
    for line in lines:
        order = line[::-1] if reverse else line
        acc, done = order[0], [order[0]]
        for item in order[1:]:
            acc = combine(acc, item)
            done.append(acc)
        out.append(done[::-1] if reverse else done)
    return [list(column) for column in zip(*out)] if axis == 0 else out


def _run_scan(kind, axis, reverse, x):
    out = torch.full((M, N), 12345.0)
    idx = torch.full((M, N), -7, dtype=torch.int32)
    _scan_kernel[(1,)](x, out, idx, kind, axis, reverse, M, N)
    return out, idx


def _py_max_nan(a, b):
    return a if a != a or a > b else b


@pytest.mark.parametrize("axis, reverse", [(0, False), (1, False), (1, True), (0, True)])
def test_scans(axis, reverse):
    x = torch.randn(M, N) * (torch.rand(M, N) < 0.5)
    x[5, 7] = float("nan")
    values = x.tolist()
    running_max, _ = _run_scan(0, axis, reverse, x)
    expected = torch.tensor(_scan_by_loop(values, _py_max_nan, axis, reverse))
    torch.testing.assert_close(running_max, expected, equal_nan=True, rtol=0, atol=0)
    filled, _ = _run_scan(1, axis, reverse, x.nan_to_num(nan=2.0))
    expected = _scan_by_loop(x.nan_to_num(nan=2.0).tolist(), lambda a, b: b if b != 0 else a, axis, reverse)
    torch.testing.assert_close(filled, torch.tensor(expected), rtol=0, atol=0)
    ties = torch.randint(-3, 3, (M, N)).float()
    flat = torch.arange(M * N).reshape(M, N).tolist()
    pairs = [list(zip(row, index)) for row, index in zip(ties.tolist(), flat)]
    best, first = _run_scan(2, axis, reverse, ties)
    expected = _scan_by_loop(pairs, lambda a, b: b if b[0] > a[0] or (b[0] == a[0] and b[1] < a[1]) else a, axis, reverse)
    torch.testing.assert_close(best, torch.tensor([[v for v, _ in row] for row in expected]), rtol=0, atol=0)
    torch.testing.assert_close(first, torch.tensor([[i for _, i in row] for row in expected], dtype=torch.int32),
                               rtol=0, atol=0)


def test_a_scan_written_for_scalars_still_runs():
    x = torch.randn(M, N)
    out, _ = _run_scan(3, 1, False, x)
    torch.testing.assert_close(out, torch.tensor(_scan_by_loop(x.tolist(), max, 1, False)), rtol=0, atol=0)
