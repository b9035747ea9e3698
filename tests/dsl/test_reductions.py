"""Corpus: reductions (sum/mean/amax/amin/max with dim and keepdim, over `:` and tiled dimensions),
softmax/log_softmax on full rows, norms, and persistent vs looped reductions on very long rows."""
import pytest
import torch
import triton

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, rand_positive, randint, randn, without_nan

LONG_ROW = 300000
PERSISTENT_AND_LOOPED = [{"reduction_loops": [None]}, {"reduction_loops": [4096]}]


def looped(n: int) -> list[dict]:
    """Explicit reduction overrides for a row of n elements: a looped chunk smaller than the row (an
    eighth of it rounded up to a power of two, at least 16: at most 8 chunks, which Triton's
    interpreter runs one by one), and for long rows the persistent form too."""
    if n < 32:
        return []
    if n >= 4096:
        return PERSISTENT_AND_LOOPED
    return [{"reduction_loops": [max(16, triton.next_power_of_2(-(-n // 8)))]}]


@helion.kernel()
def row_sum_keepdim(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m, 1], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        out[tile_m, :] = x[tile_m, :].sum(dim=-1, keepdim=True)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 37), (3, 1000)])
def test_row_sum_keepdim(shape, device):
    x = randn(*shape, device=device)
    configs = check_kernel(row_sum_keepdim, (x,), lambda x: x.sum(-1, keepdim=True),
                           overrides=looped(shape[1]))
    if shape[1] > 1:
        assert all(len(c["reduction_loops"]) == 1 for c in configs)


def test_row_sum_long_rows(device):
    x = rand_positive(2, LONG_ROW, device=device)
    check_kernel(row_sum_keepdim, (x,), lambda x: x.sum(-1, keepdim=True), n_random=0,
                 overrides=PERSISTENT_AND_LOOPED, rtol=1e-4, atol=1e-2)


@helion.kernel()
def row_statistics(x: torch.Tensor):
    m, n = x.size()
    means = torch.empty([m], dtype=x.dtype, device=x.device)
    highs = torch.empty([m], dtype=x.dtype, device=x.device)
    lows = torch.empty([m], dtype=x.dtype, device=x.device)
    maxes = torch.empty([m, 1], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        means[tile_m] = torch.mean(row, dim=1)
        highs[tile_m] = torch.amax(row, dim=1)
        lows[tile_m] = row.amin(dim=-1)
        maxes[tile_m, :] = torch.max(row, dim=1, keepdim=True).values
    return means, highs, lows, maxes


def _row_statistics_reference(x):
    return x.mean(1), x.amax(1), x.amin(1), x.max(dim=1, keepdim=True).values


@pytest.mark.parametrize("shape", [(1, 1), (6, 129), (2, 1000)])
def test_row_statistics(shape, device):
    check_kernel(row_statistics, (randn(*shape, device=device),), _row_statistics_reference,
                 overrides=looped(shape[1]))


def test_row_statistics_long_rows(device):
    check_kernel(row_statistics, (randn(2, LONG_ROW, device=device),), _row_statistics_reference,
                 n_random=0, overrides=PERSISTENT_AND_LOOPED, atol=1e-5)


def with_nan_rows(x: torch.Tensor) -> torch.Tensor:
    """`x` with NaN in some rows: once at the start, twice (the first NaN's index is due), beside
    +inf and -inf, and a whole row; rows without NaN stay as they are."""
    x = x.clone()
    n = x.size(1)
    rows = [(0, [0]), (2, [n - 1, n // 2]), (3, [n // 3]), (5, list(range(n)))]
    for row, columns in rows:
        if row < x.size(0):
            x[row, columns] = float("nan")
    if x.size(0) > 3 and n > 2:
        x[3, 0], x[3, n - 1] = float("inf"), float("-inf")
    return x


@pytest.mark.parametrize("shape", [(1, 1), (6, 129), (7, 5000)])
def test_row_statistics_of_nan_rows(shape, device):
    """amax / amin / max(dim) give NaN for a row holding NaN, as PyTorch's (Triton's tl.max passes
    over it on the GPU), in persistent and looped reductions."""
    x = with_nan_rows(randn(*shape, device=device))
    check_kernel(row_statistics, (x,), lambda x: without_nan(*_row_statistics_reference(x)),
                 outputs=lambda r, a: without_nan(*r), overrides=looped(shape[1]))


@helion.kernel()
def row_extremes(x: torch.Tensor):
    m, n = x.size()
    values = torch.empty([2, m], dtype=x.dtype, device=x.device)
    indices = torch.empty([4, m], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        high = torch.max(row, dim=1)
        low = row.min(dim=-1)
        values[0, tile_m] = high.values
        values[1, tile_m] = low.values
        indices[0, tile_m] = high.indices
        indices[1, tile_m] = low.indices
        indices[2, tile_m] = torch.argmax(row, dim=1)
        indices[3, tile_m] = row.argmin(1)
    return values, indices


def _row_extremes_reference(x):
    high, low = x.max(1), x.min(1)
    return (without_nan(torch.stack([high.values, low.values]))[0],
            torch.stack([high.indices, low.indices, x.argmax(1), x.argmin(1)]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (6, 129), (7, 300)])
def test_row_extremes_and_their_indices(shape, dtype, device):
    """The values and indices of max / min / argmax / argmin: the first extreme's index; a NaN
    wins, as in PyTorch (tl.argmax passes over it); ties (repeated values) take the first."""
    x = randn(*shape, device=device).to(dtype)
    if shape[1] > 4:
        x[:, 3] = x.amax(1)  # a tie with the row's largest value, after it or before it
        x[1, -1] = x[1].amin()
    x = with_nan_rows(x)
    check_kernel(row_extremes, (x,), _row_extremes_reference, outputs=lambda r, a: (without_nan(r[0])[0], r[1]))


@helion.kernel()
def running_log_sums(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([2, m, n], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        out[0, tile_m, :] = torch.logcumsumexp(row, dim=1)
        out[1, tile_m, :] = (row * 40.0).logcumsumexp(-1)  # terms far apart: log1p of tiny ratios
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (6, 129), (3, 1000)])
def test_running_log_sums(shape, dtype, device):
    """torch.logcumsumexp: NaN rows stay NaN from the NaN on; +inf and -inf (alone and repeated)."""
    x = with_nan_rows(randn(*shape, device=device)).to(dtype)
    if shape[1] > 4:
        x[1, :4] = torch.tensor([float("-inf"), float("-inf"), 2.0, float("inf")], dtype=dtype)
        x[-2, 5:7] = float("inf")
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(running_log_sums, (x,), lambda x: without_nan(torch.stack([x.logcumsumexp(1), (x * 40.0).logcumsumexp(1)]))[0],
                 outputs=lambda r, a: without_nan(r)[0], **tolerance)


@helion.kernel()
def running_extremes(x: torch.Tensor):
    m, n = x.size()
    values = torch.empty([2, m, n], dtype=x.dtype, device=x.device)
    indices = torch.empty([2, m, n], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        high = torch.cummax(row, dim=1)
        low = row.cummin(-1)
        values[0, tile_m, :] = high.values
        values[1, tile_m, :] = low.values
        indices[0, tile_m, :] = high.indices
        indices[1, tile_m, :] = low[1]
    return values, indices


def _running_extremes_reference(x):
    high, low = x.cummax(1), x.cummin(1)
    values = torch.stack([high.values, low.values])
    return (without_nan(values)[0] if values.dtype.is_floating_point else values,
            torch.stack([high.indices, low.indices]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("shape", [(1, 1), (6, 129), (3, 1000)])
def test_running_extremes_and_their_indices(shape, dtype, device):
    """torch.cummax / cummin: a later equal value takes the index (rows of repeated values and
    ties), and from a NaN on the values are NaN with each later NaN's index, as in PyTorch."""
    if dtype == torch.int32:
        x = randint(-20, 20, *shape, device=device).to(dtype)
    else:
        x = with_nan_rows((randn(*shape, device=device) * 4).round().to(dtype))  # rounded: many ties
    if shape[1] > 4:
        x[-1, :] = x[-1, 0]  # a row of one value
    outputs = (lambda r, a: (without_nan(r[0])[0], r[1])) if dtype.is_floating_point else None
    check_kernel(running_extremes, (x,), _running_extremes_reference, outputs=outputs)


@helion.kernel()
def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1000)])
def test_softmax(shape, device):
    x = randn(*shape, device=device) * 3.0
    check_kernel(softmax_rows, (x,), lambda x: torch.softmax(x, dim=1),
                 overrides=looped(shape[1]), rtol=1e-4, atol=1e-6)


def test_softmax_long_rows(device):
    x = randn(2, LONG_ROW, device=device) * 3.0
    check_kernel(softmax_rows, (x,), lambda x: torch.softmax(x, dim=1), n_random=0,
                 overrides=PERSISTENT_AND_LOOPED, rtol=1e-4, atol=1e-9)


@helion.kernel()
def log_softmax_rows(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.nn.functional.log_softmax(x[tile, :], dim=-1)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (9, 100)])
def test_log_softmax(shape, device):
    x = randn(*shape, device=device) * 2.0
    check_kernel(log_softmax_rows, (x,), lambda x: torch.log_softmax(x, dim=-1),
                 overrides=looped(shape[1]))


@helion.kernel()
def softmax_decomposed(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        values = x[tile_n, :]
        shifted = values - torch.amax(values, dim=1, keepdim=True)
        numerator = torch.exp(shifted)
        out[tile_n, :] = numerator / torch.sum(numerator, dim=1, keepdim=True)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 250)])
def test_softmax_decomposed(shape, device):
    x = randn(*shape, device=device)
    check_kernel(softmax_decomposed, (x,), lambda x: torch.softmax(x, dim=1),
                 overrides=looped(shape[1]), rtol=1e-4, atol=1e-6)


def test_softmax_decomposed_long_rows(device):
    x = randn(2, LONG_ROW, device=device)
    check_kernel(softmax_decomposed, (x,), lambda x: torch.softmax(x, dim=1), n_random=0,
                 overrides=PERSISTENT_AND_LOOPED, rtol=1e-4, atol=1e-9)


@helion.kernel()
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        inv_rms = torch.rsqrt(torch.mean(row * row, dim=-1, keepdim=True) + eps)
        out[tile_m, :] = (row * inv_rms * weight[:].to(torch.float32)).to(out.dtype)
    return out


def _rms_norm_reference(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


@pytest.mark.parametrize("shape,dtype", [((1, 1), torch.float32), ((17, 96), torch.float16),
                                         ((4, 1000), torch.float32)])
def test_rms_norm(shape, dtype, device):
    x, w = randn(*shape, dtype=dtype, device=device), randn(shape[1], dtype=dtype, device=device)
    check_kernel(rms_norm, (x, w, 1e-5), _rms_norm_reference, overrides=looped(shape[1]))


@helion.kernel()
def center_rows(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        row = x[tile, :]
        centered = row - row.mean(dim=-1, keepdim=True)
        variance = (centered * centered).sum(dim=-1, keepdim=True) / x.size(1)
        out[tile, :] = centered * torch.rsqrt(variance + 1e-6)
    return out


@pytest.mark.parametrize("shape", [(2, 3), (11, 70)])
def test_layer_norm_like(shape, device):
    def reference(x):
        centered = x - x.mean(-1, keepdim=True)
        return centered * torch.rsqrt(centered.pow(2).mean(-1, keepdim=True) + 1e-6)

    check_kernel(center_rows, (randn(*shape, device=device),), reference,
                 overrides=looped(shape[1]))


@helion.kernel()
def row_sum_tiled(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            acc = acc + x[tile_m, tile_n].sum(dim=1)
        out[tile_m] = acc
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 40), (2, 1100)])
def test_reduction_over_tiled_dim(shape, device):
    check_kernel(row_sum_tiled, (randn(*shape, device=device),), lambda x: x.sum(1), atol=1e-3)


@helion.kernel()
def column_sum_tiled(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([n], dtype=x.dtype, device=x.device)
    for tile_n in hl.tile(n):
        acc = hl.zeros([tile_n], dtype=torch.float32)
        for tile_m in hl.tile(m):
            acc += x[tile_m, tile_n].sum(0)
        out[tile_n] = acc
    return out


@pytest.mark.parametrize("shape", [(1, 1), (30, 9)])
def test_reduction_over_tiled_dim_zero(shape, device):
    check_kernel(column_sum_tiled, (randn(*shape, device=device),), lambda x: x.sum(0))


@helion.kernel()
def column_max_full(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([1, n], dtype=x.dtype, device=x.device)
    for tile_n in hl.tile(n):
        out[:, tile_n] = x[:, tile_n].amax(dim=0, keepdim=True)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (70, 9), (3, 33)])
def test_full_dim_reduction_along_dim_zero(shape, device):
    check_kernel(column_max_full, (randn(*shape, device=device),),
                 lambda x: x.amax(0, keepdim=True), overrides=looped(shape[0]))


@helion.kernel()
def two_reduction_sizes(a: torch.Tensor, b: torch.Tensor):
    m = a.size(0)
    sums = torch.empty([m], dtype=a.dtype, device=a.device)
    highs = torch.empty([m], dtype=a.dtype, device=a.device)
    for tile in hl.tile(m):
        sums[tile] = a[tile, :].sum(-1)
        highs[tile] = b[tile, :].amax(-1)
    return sums, highs


@pytest.mark.parametrize("m,n1,n2,overrides", [
    (1, 2, 3, []),
    (10, 40, 300, [{"reduction_loops": [None, 64]}, {"reduction_loops": [16, None]}]),
])
def test_two_reduction_sizes(m, n1, n2, overrides, device):
    a, b = randn(m, n1, device=device), randn(m, n2, device=device)
    configs = check_kernel(two_reduction_sizes, (a, b), lambda a, b: (a.sum(-1), b.amax(-1)),
                           overrides=overrides)
    assert all(len(c["reduction_loops"]) == 2 for c in configs)


@helion.kernel()
def batched_reductions(x: torch.Tensor):
    b, m, n = x.size()
    last = torch.empty([b, m], dtype=x.dtype, device=x.device)
    middle = torch.empty([b, n], dtype=x.dtype, device=x.device)
    for tile_b, tile_m in hl.tile([b, m]):
        last[tile_b, tile_m] = x[tile_b, tile_m, :].sum(dim=2)
    for tile_b, tile_n in hl.tile([b, n]):
        middle[tile_b, tile_n] = x[tile_b, :, tile_n].amin(dim=1)
    return last, middle


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 20, 7)])
def test_batched_reductions(shape, device):
    check_kernel(batched_reductions, (randn(*shape, device=device),),
                 lambda x: (x.sum(2), x.amin(1)))


@helion.kernel()
def online_softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        running_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        running_sum = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            values = x[tile_m, tile_n]
            new_max = torch.maximum(running_max, torch.amax(values, dim=1))
            scaled = torch.exp(values - new_max[:, None])
            running_sum, running_max = (
                running_sum * torch.exp(running_max - new_max) + torch.sum(scaled, dim=1),
                new_max,
            )
        for tile_n in hl.tile(n):
            out[tile_m, tile_n] = torch.exp(x[tile_m, tile_n] - running_max[:, None]) / running_sum[:, None]
    return out


@pytest.mark.parametrize("shape", [(1, 1), (3, 130), (2, 700)])
def test_online_softmax_tuple_carry(shape, device):
    x = randn(*shape, device=device) * 3.0
    check_kernel(online_softmax, (x,), lambda x: torch.softmax(x, dim=1), atol=1e-6)


@helion.kernel()
def integer_row_sums(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=torch.int32, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile, :].sum(dim=-1).to(torch.int32)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (6, 45)])
def test_integer_reduction(shape, device):
    x = torch.randint(-100, 100, shape, dtype=torch.int32).to(device)
    check_kernel(integer_row_sums, (x,), lambda x: x.sum(-1), overrides=looped(shape[1]))


@pytest.mark.parametrize("shape", [(2, 70), (3, 1000)])
def test_rms_norm_bfloat16(shape, device):
    x = randn(*shape, dtype=torch.bfloat16, device=device)
    w = randn(shape[1], dtype=torch.bfloat16, device=device)
    check_kernel(rms_norm, (x, w, 1e-5), _rms_norm_reference, overrides=looped(shape[1]))


@helion.kernel()
def per_group_norms(x: torch.Tensor) -> torch.Tensor:
    b, g, n = x.size()
    out = torch.empty([b, g], dtype=torch.float32, device=x.device)
    for tile_b in hl.tile(b):
        for tile_g in hl.tile(g):
            group = x[tile_b, tile_g, :].to(torch.float32)
            out[tile_b, tile_g] = torch.sqrt(torch.sum(group * group, dim=-1))
    return out


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 7, 50), (2, 3, 600)])
def test_full_row_reduction_inside_device_loop(shape, device):
    check_kernel(per_group_norms, (randn(*shape, device=device),),
                 lambda x: x.pow(2).sum(-1).sqrt(), overrides=looped(shape[2]))


@pytest.mark.parametrize("shape", [(3, 1), (5, 37), (2, 1000)])
@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_masked_padding_does_not_leak_into_max_min(shape, sign, device):
    x = rand_positive(*shape, device=device) * sign
    check_kernel(row_statistics, (x,), _row_statistics_reference, overrides=looped(shape[1]))
    check_kernel(column_max_full, (x.T.contiguous(),), lambda x: x.amax(0, keepdim=True),
                 overrides=looped(shape[1]))


@helion.kernel()
def row_max_tiled(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        best = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        for tile_n in hl.tile(n):
            best = torch.maximum(best, torch.amax(x[tile_m, tile_n], dim=1))
        out[tile_m] = best
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 37), (3, 130)])
def test_tiled_max_of_negative_rows(shape, device):
    x = -rand_positive(*shape, device=device)
    check_kernel(row_max_tiled, (x,), lambda x: x.amax(1))


@helion.kernel(static_shapes=False)
def row_sum_dynamic(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(x.size(0)):
        out[tile_m] = x[tile_m, :].sum(-1)
    return out


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
def test_empty_inputs(shape, device):
    x = randn(*shape, device=device)
    check_kernel(row_sum_keepdim, (x,), lambda x: x.sum(-1, keepdim=True), n_random=1)
    check_kernel(softmax_rows, (x,), lambda x: torch.softmax(x, dim=1), n_random=1)
    check_kernel(row_sum_dynamic, (x,), lambda x: x.sum(-1), n_random=1)
