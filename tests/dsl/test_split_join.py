"""Corpus: Helion's `hl.split` / `hl.join` (Triton's tl.split / tl.join over a last dim of two) and
views that split one dim into adjacent dims: a merged [2 * tile] dim viewed as [tile, 2], a tile as
[tile / 2, 2] (`block_n // 2` of a registered block size, `tile.block_size // 2`), a whole dim of 8
as [4, 2]. Complex products on (real, imaginary) pairs and pair swaps, written as Helion users
write them."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, compare, randn


@helion.kernel()
def complex_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise product of complex numbers stored as [..., 2] (real, imaginary) pairs."""
    n = a.size(0)
    out = torch.empty_like(a)
    for tile in hl.tile(n):
        a_re, a_im = hl.split(a[tile, :])
        b_re, b_im = hl.split(b[tile, :])
        out[tile, :] = hl.join(a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re)
    return out


def complex_mul_reference(a, b):
    product = torch.view_as_complex(a.contiguous()) * torch.view_as_complex(b.contiguous())
    return torch.view_as_real(product)


@pytest.mark.parametrize("n", [1, 37, 130])
def test_complex_mul_splits_and_joins_pairs(n, device):
    a, b = randn(n, 2, device=device), randn(n, 2, device=device)
    check_kernel(complex_mul, (a, b), complex_mul_reference)


@helion.kernel()
def deinterleave(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Even and odd elements of a flat array: a slice of twice the tile viewed as [tile, 2], split."""
    n = x.size(0) // 2
    evens = torch.empty([n], dtype=x.dtype, device=x.device)
    odds = torch.empty([n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        begin = tile.begin * 2
        pairs = x[begin:begin + tile.block_size * 2].reshape(tile.block_size, 2)
        evens[tile], odds[tile] = hl.split(pairs)
    return evens, odds


@pytest.mark.parametrize("n", [1, 45, 200])
def test_deinterleave_splits_a_merged_dim(n, device):
    x = randn(2 * n, device=device)
    check_kernel(deinterleave, (x,), lambda x: (x[0::2], x[1::2]))


@helion.kernel()
def swap_pairs(x: torch.Tensor) -> torch.Tensor:
    """Each pair of neighbours along a row swapped: the tile viewed as [block_n // 2, 2], split,
    joined the other way round and merged back. A row of odd length takes 0 past its end."""
    m, n = x.size()
    out = torch.empty_like(x)
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    for tile_m, tile_n in hl.tile([m, n], block_size=[block_m, block_n]):
        even, odd = hl.split(x[tile_m, tile_n].reshape(block_m, block_n // 2, 2))
        out[tile_m, tile_n] = hl.join(odd, even * 2.0).reshape(block_m, block_n)
    return out


def swap_pairs_reference(x):
    m, n = x.shape
    padded = torch.cat([x, x.new_zeros(m, n % 2)], dim=1).reshape(m, -1, 2)
    return torch.stack([padded[..., 1], padded[..., 0] * 2.0], dim=-1).reshape(m, -1)[:, :n]


@pytest.mark.parametrize("m,n", [(1, 2), (5, 37), (3, 64)])
def test_split_of_a_tile_into_half_blocks_and_back(m, n, device):
    check_kernel(swap_pairs, (randn(m, n, device=device),), swap_pairs_reference)


@helion.kernel()
def pair_sums(x: torch.Tensor) -> torch.Tensor:
    """Sum of (x + 1) over all elements, reduced pairwise: the lanes past a tile's end hold 1 after
    the shift, so the split dims must keep the tile's mask (over both of them)."""
    out = torch.zeros([1], dtype=torch.float32, device=x.device)
    for tile in hl.tile(x.size(0)):
        pairs = (x[tile] + 1.0).reshape(tile.block_size // 2, 2)
        hl.atomic_add(out, [0], pairs.sum(1).sum(0))
    return out


@pytest.mark.parametrize("n", [1, 3, 77])
def test_reductions_over_split_dims_keep_the_tile_mask(n, device):
    check_kernel(pair_sums, (randn(n, device=device),), lambda x: (x + 1.0).sum().reshape(1), atol=1e-3)


@helion.kernel()
def alternating_row_sums(x: torch.Tensor) -> torch.Tensor:
    """x[:, 0] - x[:, 1] + x[:, 2] - ... over rows of 8: the whole dim viewed as [4, 2], split."""
    m = x.size(0)
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        first, second = hl.split(x[tile, :].reshape(tile.block_size, 4, 2))
        out[tile] = (first - second).sum(-1)
    return out


@pytest.mark.parametrize("m", [1, 29])
def test_whole_dim_split_into_constant_parts(m, device):
    check_kernel(alternating_row_sums, (randn(m, 8, device=device),), lambda x: (x[:, 0::2] - x[:, 1::2]).sum(-1))


@helion.kernel()
def inferred_split_views(x: torch.Tensor) -> torch.Tensor:
    """alternating_row_sums with the parts left to -1 (the whole dim of 8 as [-1, 2]), then each
    pair of neighbouring sums swapped: the tile viewed as [-1, 2] (half its block), joined the other
    way round and merged back by a view as [-1]. An odd count takes 0 past its end."""
    m = x.size(0)
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        first, second = hl.split(x[tile, :].reshape(tile.block_size, -1, 2))
        even, odd = hl.split((first - second).sum(-1).reshape(-1, 2))
        out[tile] = hl.join(odd, even).reshape(-1)
    return out


def inferred_split_views_reference(x):
    sums = (x[:, 0::2] - x[:, 1::2]).sum(-1)
    padded = torch.cat([sums, sums.new_zeros(len(sums) % 2)])
    return padded.reshape(-1, 2).flip(-1).reshape(-1)[: len(sums)]


@pytest.mark.parametrize("m", [1, 2, 45])
def test_minus_one_in_views_that_split_dims(m, device):
    check_kernel(inferred_split_views, (randn(m, 8, device=device),), inferred_split_views_reference)


@helion.kernel()
def halves_of_tiles(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each tile viewed as [2, -1] (its two halves as rows): their sum accumulated (the split keeps
    the tile's mask over both parts) and the tile scaled and merged back by a view as [-1]."""
    total = torch.zeros([1], dtype=torch.float32, device=x.device)
    scaled = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        halves = (x[tile] + 1.0).reshape(2, -1)
        hl.atomic_add(total, [0], halves.sum(0).sum(0))
        scaled[tile] = (halves * 3.0).reshape(-1) - 3.0
    return total, scaled


@pytest.mark.parametrize("n", [1, 3, 77])
def test_tile_viewed_as_two_rows_of_an_inferred_half(n, device):
    check_kernel(halves_of_tiles, (randn(n, device=device),), lambda x: ((x + 1.0).sum().reshape(1), x * 3.0),
                 atol=1e-3)


@helion.kernel()
def padded_row_pairs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose length is not a power of two (their block is padded past it) viewed as [n / 2, 2]
    and [n / 4, 2, 2] (the first part keeps a padded block and mask of its own): each row's pair
    sums, and the pairs swapped and merged back into the row by a view as [-1]."""
    m = x.size(0)
    sums = torch.empty([m, x.size(1) // 4, 2], dtype=x.dtype, device=x.device)
    swapped = torch.empty_like(x)
    for tile in hl.tile(m):
        sums[tile, :, :] = x[tile, :].reshape(tile.block_size, -1, 2, 2).sum(-1)
        even, odd = hl.split(x[tile, :].reshape(tile.block_size, -1, 2))
        swapped[tile, :] = hl.join(odd, even).reshape(tile.block_size, -1)
    return sums, swapped


@pytest.mark.parametrize("m,n", [(1, 12), (7, 12), (3, 20), (2, 4)])
def test_whole_dims_not_a_power_of_two_split_and_merge_back(m, n, device):
    x = randn(m, n, device=device)
    check_kernel(padded_row_pairs, (x,),
                 lambda x: (x.reshape(m, -1, 2, 2).sum(-1), x.reshape(m, -1, 2).flip(-1).reshape(m, n)))


@helion.kernel(static_shapes=False)
def runtime_row_pairs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """padded_row_pairs over rows of a run-time length n: the whole dim viewed as [-1, 2] and
    [n // 2, 2] (a first part of a run-time size), and the pairs merged back into a view as [n]."""
    m, n = x.size()
    sums = torch.empty([m, n // 2], dtype=x.dtype, device=x.device)
    swapped = torch.empty_like(x)
    for tile in hl.tile(m):
        sums[tile, :] = x[tile, :].reshape(tile.block_size, -1, 2).sum(-1)
        even, odd = hl.split(x[tile, :].reshape(tile.block_size, n // 2, 2))
        swapped[tile, :] = hl.join(odd, even).reshape(tile.block_size, n)
    return sums, swapped


def runtime_row_pairs_reference(x):
    pairs = x.reshape(x.size(0), -1, 2)
    return pairs.sum(-1), pairs.flip(-1).reshape(x.shape)


@pytest.mark.parametrize("m,n", [(1, 2), (5, 12), (3, 64)])
def test_run_time_whole_dims_split_and_merge_back(m, n, device):
    check_kernel(runtime_row_pairs, (randn(m, n, device=device),), runtime_row_pairs_reference)


def test_run_time_split_serves_every_even_length_of_its_bucket(device):
    """One binding (the split's guard n == (n // 2) * 2 its only specialization) runs rows of 12,
    20 and 64; an odd length fails that guard and cannot be viewed as pairs."""
    bound = runtime_row_pairs.bind((randn(3, 12, device=device),))
    for n in (12, 20, 64):
        x = randn(3, n, device=device)
        assert runtime_row_pairs.bind((x,)) is bound
        for got, want in zip(bound(x), runtime_row_pairs_reference(x.double().cpu())):
            compare(got, want, label=f"n={n}")
    with pytest.raises(exc.ShapeMismatch, match="view of \\[tile_0, size13\\] as \\[tile_0, -1, size2\\]"):
        runtime_row_pairs.bind((randn(3, 13, device=device),))


@helion.kernel()
def join_merge_split(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """hl.join, a view merging the pair into one dim of twice the tile, the view back, hl.split."""
    n = x.size(0)
    first = torch.empty_like(x)
    second = torch.empty_like(y)
    for tile in hl.tile(n):
        flat = hl.join(x[tile], y[tile]).reshape(tile.block_size * 2)
        a, b = hl.split(flat.reshape(tile.block_size, 2))
        first[tile], second[tile] = a + 1.0, b * 3.0
    return first, second


@pytest.mark.parametrize("n", [1, 50])
def test_join_merge_split_round_trip(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    check_kernel(join_merge_split, (x, y), lambda x, y: (x + 1.0, y * 3.0))


@helion.kernel()
def split_of_a_tile(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, 0] = hl.split(x[tile, 0])[0]
    return out


@helion.kernel()
def join_of_two_dtypes(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 2], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = hl.join(x[tile, 0], x[tile, 1].to(torch.float16))
    return out


@helion.kernel()
def split_before_pairs(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile, :].reshape(tile.block_size, 2, 3).sum([1, 2])
    return out


@helion.kernel()
def split_of_a_tile_by_three(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros([1], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        hl.atomic_add(out, [0], x[tile, 0].reshape(tile.block_size // 3, 3).sum())
    return out


@helion.kernel()
def reordered_split(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        merged = torch.stack([x[tile, 0], x[tile, 1]], dim=1).reshape(tile.block_size * 2)
        out[tile, :] = merged.reshape(2, tile.block_size).T
    return out


@pytest.mark.parametrize("kernel,error,message", [
    (split_of_a_tile, exc.ShapeMismatch, "hl.split of a value of shape \\[tile_0\\]: its last dim must have size 2"),
    (join_of_two_dtypes, exc.TypeMismatch, "hl.join of torch.float32 and torch.float16 values"),
    (split_before_pairs, exc.ShapeMismatch, "size6 split into \\[size2, size3\\]: a whole dim whose size is not a "
     "power of two \\(its block is padded past the size\\) splits into a first part and power-of-two parts after it"),
    (split_of_a_tile_by_three, exc.ShapeMismatch, "split into .*: each part must be a power of two"),
    (reordered_split, exc.ShapeMismatch, "adjacent dims merged into one, and a dim split into adjacent ones"),
])
def test_unsupported_splits_say_what_is_supported(kernel, error, message):
    x = randn(40, 6)
    with pytest.raises(error, match=message):
        kernel.bind((x,)).to_triton_code(kernel.bind((x,)).config_spec.default_config())
