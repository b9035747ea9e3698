"""Corpus: torch.sort / argsort / msort / topk / flip (fliplr, flipud) / roll / gather / take_along_dim in device code, against
PyTorch's stable sort: along whole dims whose size is not a power of two (the block's padding must
stay out of the valid lanes), along a first dim, within tiles (the last one partial), with NaN,
infinities, signed zeros and ties; topk's k a compile-time constant, checked against the dim's
size, also where that size varies at run time."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn, without_nan


def special_floats(x: torch.Tensor) -> torch.Tensor:
    """`x` with NaN, infinities, signed zeros and a tie in its first row(s), where they fit."""
    flat = x.view(-1)
    specials = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, 1.5, -0.0]
    flat[: min(len(specials), flat.numel())] = torch.tensor(specials[: flat.numel()], dtype=x.dtype)
    return x


def row_input(shape, dtype, device):
    if dtype == torch.int32:
        x = randint(-4, 5, *shape, device=device).to(dtype)  # many ties
        x.view(-1)[:2] = torch.tensor([2**31 - 1, -(2**31)], dtype=dtype)[: x.numel()]
        return x
    return special_floats(randn(*shape, dtype=dtype, device=device))


@helion.kernel()
def sort_rows(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    down = torch.empty_like(x)
    down_at = torch.empty([m, n], dtype=torch.int64, device=x.device)
    up = torch.empty_like(x)
    up_at = torch.empty([m, n], dtype=torch.int64, device=x.device)
    order = torch.empty([m, n], dtype=torch.int64, device=x.device)
    for tile in hl.tile(m):
        v, i = torch.sort(x[tile, :], dim=-1, descending=True)
        down[tile, :] = v
        down_at[tile, :] = i
        ascending = x[tile, :].sort(1)
        up[tile, :] = ascending.values
        up_at[tile, :] = ascending.indices
        order[tile, :] = torch.argsort(x[tile, :], dim=1, descending=True)
    return down, down_at, up, up_at, order


def sort_rows_reference(x):
    down = torch.sort(x, dim=-1, descending=True, stable=True)
    up = torch.sort(x, dim=-1, stable=True)
    return without_nan(down.values, down.indices, up.values, up.indices, down.indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("shape", [(1, 1), (6, 37), (3, 300)])
def test_sort_rows_as_a_stable_sort(shape, dtype, device):
    x = row_input(shape, dtype, device)
    check_kernel(sort_rows, (x,), sort_rows_reference, outputs=lambda r, a: without_nan(*r), rtol=0, atol=0)


@helion.kernel()
def top_rows(x: torch.Tensor, k: int) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    k = hl.specialize(k)
    big = torch.empty([m, k], dtype=x.dtype, device=x.device)
    big_at = torch.empty([m, k], dtype=torch.int64, device=x.device)
    small = torch.empty([m, k], dtype=x.dtype, device=x.device)
    small_at = torch.empty([m, k], dtype=torch.int64, device=x.device)
    unsorted = torch.empty([m, k], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v, i = torch.topk(x[tile, :], k, dim=-1)
        big[tile, :] = v
        big_at[tile, :] = i
        least = x[tile, :].topk(k, dim=1, largest=False)
        small[tile, :] = least.values
        small_at[tile, :] = least.indices
        unsorted[tile, :] = torch.topk(x[tile, :], k, sorted=False).values
    return big, big_at, small, small_at, unsorted


def top_rows_reference(x, k):
    down = torch.sort(x, dim=-1, descending=True, stable=True)
    up = torch.sort(x, dim=-1, stable=True)
    return without_nan(down.values[:, :k], down.indices[:, :k], up.values[:, :k], up.indices[:, :k], down.values[:, :k])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("shape,k", [((1, 1), 1), ((5, 16), 16), ((7, 100), 7), ((2, 1000), 16), ((3, 9), 5)])
def test_topk_rows(shape, k, dtype, device):
    x = row_input(shape, dtype, device)
    check_kernel(top_rows, (x, k), top_rows_reference, outputs=lambda r, a: without_nan(*r), rtol=0, atol=0)


@helion.kernel()
def columns_and_flips(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    up = torch.empty_like(x)
    up_at = torch.empty([m, n], dtype=torch.int64, device=x.device)
    upside_down = torch.empty_like(x)
    for tile in hl.tile(n):
        column = x[:, tile]
        ordered = torch.sort(column, dim=0)
        up[:, tile] = ordered.values
        up_at[:, tile] = ordered.indices
        upside_down[:, tile] = torch.flipud(column) * 2
    return up, up_at, upside_down


@pytest.mark.parametrize("shape", [(1, 3), (45, 20)])
def test_sort_and_flip_along_the_first_dim(shape, device):
    x = special_floats(randn(*shape, device=device))
    check_kernel(columns_and_flips, (x,), lambda x: without_nan(*torch.sort(x, dim=0, stable=True), x.flip(0) * 2),
                 outputs=lambda r, a: without_nan(*r), rtol=0, atol=0)


@helion.kernel()
def flip_planes(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    b, m, n = x.size()
    both = torch.empty_like(x)
    last = torch.empty_like(x)
    rolled = torch.empty_like(x)
    for tile in hl.tile(b):
        plane = x[tile, :, :]
        both[tile, :, :] = torch.flip(plane, dims=[1, 2])
        last[tile, :, :] = plane.flip(-1) + plane.fliplr()
        rolled[tile, :, :] = torch.roll(plane, shifts=(2, -9), dims=(1, 2)) + plane.roll(1, 2)
    return both, last, rolled


@helion.kernel()
def order_flags(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    ordered = torch.empty([m, n], dtype=torch.int32, device=x.device)
    at = torch.empty([m, n], dtype=torch.int64, device=x.device)
    for tile in hl.tile(m):
        flags = x[tile, :] > 0
        down = torch.sort(flags.flip(1), dim=1, descending=True)
        ordered[tile, :] = down.values.int() + 2 * flags.roll(1, 1).int()
        at[tile, :] = down.indices
    return ordered, at


def test_sort_flip_and_roll_of_bools(device):
    x = randn(5, 21, device=device)
    check_kernel(order_flags, (x,), lambda x: (
        torch.sort((x > 0).flip(1).int(), dim=1, descending=True, stable=True).values + 2 * (x > 0).roll(1, 1).int(),
        torch.sort((x > 0).flip(1).int(), dim=1, descending=True, stable=True).indices), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 7), (2, 16, 32)])
def test_flip_whole_dims(shape, dtype, device):
    x = (randn(*shape, device=device) * 100).round().to(dtype)  # integral: the sum of two flips is exact
    check_kernel(flip_planes, (x,), lambda x: (x.flip(1, 2), x.flip(2) + x.flip(1),
                                               torch.roll(x, (2, -9), (1, 2)) + x.roll(1, 2)), rtol=0, atol=0)


@helion.kernel()
def within_tiles(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    (n,) = x.size()
    up = torch.empty_like(x)
    up_at = torch.empty([n], dtype=torch.int64, device=x.device)
    reversed_ = torch.empty_like(x)
    for tile in hl.tile(n):
        ordered = x[tile].sort()
        up[tile] = ordered.values
        up_at[tile] = ordered.indices + tile.begin
        reversed_[tile] = x[tile].flip(0)
    return up, up_at, reversed_


def within_tiles_reference(x, config):
    block = config["block_sizes"][0]
    pieces = [torch.sort(x[start:start + block], stable=True) for start in range(0, x.numel(), block)]
    starts = range(0, x.numel(), block)
    return (torch.cat([p.values for p in pieces]), torch.cat([p.indices + s for p, s in zip(pieces, starts)]),
            torch.cat([x[start:start + block].flip(0) for start in starts]))


@pytest.mark.parametrize("n", [5, 37])
def test_sort_and_flip_within_tiles(n, device):
    x = randint(-3, 4, n, device=device).float() + randn(n, device=device) * (randint(0, 2, n, device=device) > 0)
    check_kernel(within_tiles, (x,), within_tiles_reference, rtol=0, atol=0, reference_takes_config=True,
                 extra_configs=[helion.Config(block_sizes=[16])])


@helion.kernel(static_shapes=False)
def top_of_runtime_rows(x: torch.Tensor, k: int) -> torch.Tensor:
    m, n = x.size()
    k = hl.specialize(k)
    out = torch.empty([m, k], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        out[tile, :] = torch.topk(x[tile, :], k).values
    return out


def test_topk_guards_a_run_time_size(device):
    x = randn(3, 50, device=device)
    torch.testing.assert_close(top_of_runtime_rows(x, 7), torch.topk(x, 7).values, rtol=0, atol=0)
    y = randn(4, 20, device=device)
    torch.testing.assert_close(top_of_runtime_rows(y, 7), torch.topk(y, 7).values, rtol=0, atol=0)
    with pytest.raises(exc.ShapeMismatch, match="k=7 is more than the 6 elements"):
        top_of_runtime_rows(randn(2, 6, device=device), 7)


@helion.kernel()
def gathered_rows(x: torch.Tensor, index: torch.Tensor, flags: torch.Tensor):
    m, n = x.size()
    k = index.size(1)
    out = torch.empty([m, k], dtype=x.dtype, device=x.device)
    picked = torch.empty([m, k], dtype=torch.bool, device=x.device)
    for tile in hl.tile(m):
        positions = index[tile, :]
        out[tile, :] = torch.gather(x[tile, :], 1, positions) * 2
        picked[tile, :] = flags[tile, :].gather(-1, positions)
    return out, picked


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 1, 3), (5, 37, 20), (9, 16, 50)])
def test_gather_along_whole_dims(m, n, k, dtype, device):
    """Fewer or more positions than the row holds (both padded blocks), repeated positions, the
    row's last element; a one-element row; bool values."""
    x = row_input((m, n), dtype, device)
    index = randint(0, n, m, k, device=device)
    index[:, 0] = n - 1
    flags = randint(0, 2, m, n, device=device).bool()
    check_kernel(gathered_rows, (x, index, flags),
                 lambda x, i, f: (without_nan(torch.gather(x, 1, i) * 2)[0], torch.gather(f, 1, i)),
                 outputs=lambda r, a: (without_nan(r[0])[0], r[1]))


@helion.kernel()
def taken_along_rows(x: torch.Tensor, index: torch.Tensor, shared: torch.Tensor):
    m, n = x.size()
    out = torch.empty([m, index.size(1)], dtype=x.dtype, device=x.device)
    common = torch.empty([m, shared.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        row = x[tile, :]
        out[tile, :] = torch.take_along_dim(row, index[tile, :], dim=1)
        common[tile, :] = row.take_along_dim(shared[None, :], -1)  # one row of positions for all rows
    return out, common


@pytest.mark.parametrize("m,n,k", [(1, 1, 2), (5, 37, 20)])
def test_take_along_dim_broadcasts_the_other_dims(m, n, k, device):
    x = randn(m, n, device=device)
    index, shared = randint(0, n, m, k, device=device), randint(0, n, 7, device=device)
    check_kernel(taken_along_rows, (x, index, shared),
                 lambda x, i, s: (torch.take_along_dim(x, i, 1), torch.take_along_dim(x, s[None, :], 1)))


@helion.kernel()
def gather_at_floats(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.gather(x[tile, :], 1, x[tile, :])
    return out


@helion.kernel()
def gather_of_other_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.gather(x[tile, :], 1, index[:, :])
    return out


@helion.kernel()
def top_unspecialized(x: torch.Tensor, k: int) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m, 4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        out[tile, :] = torch.topk(x[tile, :], k).values
    return out


@helion.kernel()
def top_of_tiles(x: torch.Tensor) -> torch.Tensor:
    (n,) = x.size()
    out = torch.empty([4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        out[:] = torch.topk(x[tile], 4).values
    return out


@helion.kernel()
def sort_doubles(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(m):
        out[tile, :] = torch.sort(x[tile, :]).values
    return out


@pytest.mark.parametrize("kernel,args,error,message", [
    (top_unspecialized, lambda: (randn(3, 8), 4), exc.NotSupported, "torch.topk's k: .* is not a compile-time constant"),
    (top_rows, lambda: (randn(3, 8), 9), exc.ShapeMismatch, "k=9 is more than the 8 elements"),
    (top_of_tiles, lambda: (randn(40),), exc.NotSupported, "torch.topk along a tile's dim"),
    (sort_doubles, lambda: (randn(3, 8, dtype=torch.float64),), exc.NotSupported, "torch.sort of torch.float64 values"),
    (gather_at_floats, lambda: (randn(3, 8),), exc.TypeMismatch, "torch.gather with torch.float32 positions"),
    (gather_of_other_rows, lambda: (randn(3, 8), randint(0, 8, 3, 8)), exc.ShapeMismatch, "the dims other than 1 must be the same"),
])
def test_ordering_errors(kernel, args, error, message):
    with pytest.raises(error, match=message):
        bound = kernel.bind(args())
        bound.to_triton_code(bound.config_spec.default_config())


@helion.kernel()
def order_statistics(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    middle = torch.empty([m], dtype=x.dtype, device=x.device)
    middle_at = torch.empty([m], dtype=torch.int64, device=x.device)
    middle_of_numbers = torch.empty([m, 1], dtype=x.dtype, device=x.device)
    third = torch.empty([m], dtype=x.dtype, device=x.device)
    third_at = torch.empty([m], dtype=torch.int64, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        median = torch.median(v, dim=1)
        middle[tile] = median.values
        middle_at[tile] = median.indices
        middle_of_numbers[tile, :] = v.nanmedian(1, keepdim=True).values
        kth = torch.kthvalue(v, 3, dim=1)
        third[tile] = kth.values
        third_at[tile] = kth.indices
    return middle, middle_at, middle_of_numbers, third, third_at


@pytest.mark.parametrize("shape", [(3, 3), (6, 9), (4, 130)])
def test_median_nanmedian_kthvalue(shape, device):
    x = randn(*shape, device=device)
    x[0, :2] = float("nan")  # a median of values holding NaN is NaN at the first NaN
    x[1, :] = float("nan")
    x[2, 1:] = 0.5  # ties
    # kthvalue's position among equal values is PyTorch's choice: checked as the value it points at
    check_kernel(order_statistics, (x,), lambda x: without_nan(
        torch.median(x, 1).values, torch.median(x, 1).indices, torch.nanmedian(x, 1, keepdim=True).values,
        torch.kthvalue(x, 3, 1).values, torch.kthvalue(x, 3, 1).values),
        outputs=lambda r, a: without_nan(*r[:4], a[0].gather(1, r[4][:, None])[:, 0]), rtol=0, atol=0)
