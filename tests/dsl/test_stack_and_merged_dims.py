"""Corpus: `torch.stack` and `torch.cat` of tiles, views that merge adjacent dims (`reshape(tile.block_size * 2, ...)`,
`reshape(-1)`), and slices whose start is known only on the device (`x[t, s:s + length]`), as
Helion's int4_gemm example uses them: packed int4 weights unpacked into two tiles, stacked and
interleaved along K, multiplied with the slice of A at twice the packed tile's begin."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn


@helion.kernel(static_shapes=False)
def int4_matmul(a: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    _, n = packed.shape
    out = torch.zeros(m, n, dtype=a.dtype, device=a.device)
    block_k = hl.register_block_size(k // 2)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k // 2, block_size=block_k):
            pair = packed[tile_k, tile_n]
            low = ((pair << 4) >> 4).to(torch.int8).to(a.dtype)  # sign-extended low nibble
            high = (pair >> 4).to(torch.int8).to(a.dtype)
            unpacked = torch.stack([low, high], dim=1).reshape(tile_k.block_size * 2, tile_n.block_size)
            begin = tile_k.begin * 2
            length = tile_k.block_size * 2
            acc = acc + hl.dot(a[tile_m, begin:(begin + length)], unpacked)
        out[tile_m, tile_n] = acc.to(a.dtype)
    return out


def pack_int4(values: torch.Tensor) -> torch.Tensor:
    """[K, N] int8 values in [-8, 7] as [K/2, N] bytes: row 2i in the low nibble, row 2i+1 in the high."""
    pairs = values.reshape(values.shape[0] // 2, 2, values.shape[1])
    return ((pairs[:, 0] & 0xF) | (pairs[:, 1] << 4)).to(torch.int8)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    low = (packed.to(torch.int16) << 12 >> 12)
    high = packed.to(torch.int16) >> 4
    return torch.stack([low, high], dim=1).reshape(packed.shape[0] * 2, packed.shape[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m,k,n", [(37, 90, 50), (1, 2, 1), (5, 258, 17)])
def test_int4_matmul_unpacks_interleaves_and_multiplies(m, k, n, dtype, device):
    values = randint(-8, 8, k, n, device="cpu").to(torch.int8)
    packed = pack_int4(values).to(device)
    assert torch.equal(unpack_int4(packed.cpu()), values.to(torch.int16))
    a = randn(m, k, dtype=dtype, device=device)
    # float32 dots run as TF32 on a GPU: A's values rounded to 11 bits, errors growing as sqrt(k)
    # (0.07 at k = 258 on an H100); an unpacking or interleaving error is of the values' size
    exact = dtype == torch.float32 and device == "cpu"
    check_kernel(int4_matmul, (a, packed), lambda a, p: a @ unpack_int4(p).double(),
                 rtol=1e-4 if exact else 2e-2, atol=1e-3 if exact else (0.25 if dtype == torch.float32 else 0.5))


@helion.kernel()
def stacked(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, w: torch.Tensor):
    n = x.size(0)
    pairs = torch.empty([n, 2], dtype=x.dtype, device=x.device)
    quads = torch.empty([n, 4], dtype=x.dtype, device=x.device)
    leading = torch.empty([2, n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        a, b = x[tile], y[tile]
        pairs[tile, :] = torch.stack([a, b], dim=-1)
        quads[tile, :] = torch.stack([a, b * 2.0, z[tile], w[tile] - a], dim=1)
        leading[:, tile] = torch.stack([a + b, a - b])
    return pairs, quads, leading


@pytest.mark.parametrize("n", [1, 45, 130])
def test_stack_along_each_dim(n, device):
    x, y, z, w = (randn(n, device=device) for _ in range(4))
    check_kernel(stacked, (x, y, z, w), lambda x, y, z, w: (
        torch.stack([x, y], -1), torch.stack([x, y * 2, z, w - x], 1), torch.stack([x + y, x - y])))


@helion.kernel()
def interleaved(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    out = torch.empty([2 * n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        begin = tile.begin * 2
        out[begin:begin + tile.block_size * 2] = torch.stack([x[tile], y[tile]], dim=1).reshape(-1)
    return out


@pytest.mark.parametrize("n", [1, 37, 200])
def test_merged_view_stored_through_a_device_slice(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    check_kernel(interleaved, (x, y), lambda x, y: torch.stack([x, y], 1).reshape(-1))


@helion.kernel()
def row_pairs_merged(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        block = x[tile_m, tile_n]
        flipped = torch.stack([block, -block], dim=1)  # [tile_m, 2, tile_n]
        merged = flipped.reshape(tile_m.block_size * 2, tile_n.block_size)
        begin = tile_m.begin * 2
        out[begin:begin + tile_m.block_size * 2, tile_n] = merged * 2.0 + 1.0
    return out


def test_merged_rows_past_the_end_are_not_stored(device):
    # rows 2i and 2i+1 of `out` take x's row i and its negation; only the first m/2 rows of x land
    x = randn(9, 21, device=device)
    expected = torch.stack([x.double(), -x.double()], 1).reshape(18, 21)[:9] * 2.0 + 1.0
    check_kernel(row_pairs_merged, (x,), lambda x: expected)


@helion.kernel()
def windows(x: torch.Tensor, step: int) -> torch.Tensor:
    groups = x.size(0)
    out = torch.empty([groups, 5], dtype=x.dtype, device=x.device)
    for g in hl.grid(groups):
        begin = g * step
        out[g, :] = x[begin:begin + 5] * 2.0
    return out


@pytest.mark.parametrize("step", [1, 3])
def test_device_start_slice_of_a_host_length_is_masked_at_the_end(step, device):
    x = randn(11, device=device)

    def reference(x, step):
        padded = torch.cat([x, torch.zeros(5 + step * 11, dtype=x.dtype)])
        return torch.stack([padded[g * step:g * step + 5] for g in range(11)]) * 2.0

    check_kernel(windows, (x, step), reference)


@helion.kernel()
def rotated_halves(x: torch.Tensor) -> torch.Tensor:
    m, d = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(m):
        first, second = x[tile, : d // 2], x[tile, d // 2 :]
        out[tile, :] = torch.cat([-second, first], dim=-1) * 2.0 + x[tile, :]
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m,d", [(1, 64), (37, 128)])
def test_cat_of_halves_rotates(m, d, dtype, device):
    """Rotary embedding's rotate_half: the two halves of a row, swapped and one negated."""
    x = randn(m, d, device=device).to(dtype)
    check_kernel(rotated_halves, (x,), lambda x: torch.cat([-x[:, d // 2:], x[:, : d // 2]], -1) * 2.0 + x)


@helion.kernel()
def side_by_side(x: torch.Tensor, y: torch.Tensor):
    m, n = x.size()
    pairs = torch.empty([m, 2 * n], dtype=x.dtype, device=x.device)
    quads = torch.empty([m, 4 * n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        a, b = x[tile, :], y[tile, :]
        pairs[tile, :] = torch.concat((a, b), axis=1)
        quads[tile, :] = torch.concatenate([a, b * 2.0, a - b, b], dim=-1)
    return pairs, quads


@pytest.mark.parametrize("m", [1, 45])
def test_cat_along_whole_dims(m, device):
    x, y = randn(m, 16, device=device), randn(m, 16, device=device)
    check_kernel(side_by_side, (x, y), lambda x, y: (torch.cat([x, y], 1), torch.cat([x, y * 2, x - y, y], 1)))


@helion.kernel()
def cat_of_three(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 3 * x.size(1)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.cat([x[tile, :], x[tile, :] * 2.0, -x[tile, :]], dim=1)
    return out


@helion.kernel()
def cat_of_unequal_extents(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), x.size(1) + 8], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.cat([x[tile, :], x[tile, :8] * 2.0], dim=1)
    return out


@helion.kernel()
def cat_of_odd_rows(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 2 * x.size(1)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.cat([x[tile, :], x[tile, :]], dim=1)
    return out


@helion.kernel()
def cat_of_mixed_dtypes(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 2 * x.size(1) + y.size(1) + 1], dtype=torch.float32, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.cat([x[tile, :], x[tile, 0:1] * 3.0, y[tile, :], x[tile, :] + 1.0], dim=-1)
    return out


@helion.kernel()
def partial_rotary(x: torch.Tensor, rotary_dim: hl.constexpr) -> torch.Tensor:
    m, d = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(m):
        half = rotary_dim // 2
        first, second, rest = x[tile, :half], x[tile, half:rotary_dim], x[tile, rotary_dim:]
        out[tile, :] = torch.cat([-second, first, rest], dim=-1)
    return out


@pytest.mark.parametrize("m", [1, 45])
@pytest.mark.parametrize("n", [16, 13])
def test_cat_of_other_counts_and_extents(m, n, device):
    """Three values, unequal extents (a whole dim and a slice of it), whole dims of an odd extent:
    the lanes of the joined dim gathered from each value's own."""
    x = randn(m, n, device=device)
    check_kernel(cat_of_three, (x,), lambda x: torch.cat([x, x * 2.0, -x], 1))
    check_kernel(cat_of_unequal_extents, (x,), lambda x: torch.cat([x, x[:, :8] * 2.0], 1))
    check_kernel(cat_of_odd_rows, (x,), lambda x: torch.cat([x, x], 1))


def test_cat_promotes_and_takes_one_lane_values(device):
    x, y = randn(37, 13, device=device).to(torch.bfloat16), randn(37, 5, device=device)
    # the kernel's bf16 arithmetic rounds only at the store, PyTorch's after each op: bf16 tolerance
    check_kernel(cat_of_mixed_dtypes, (x, y), lambda x, y: torch.cat([x, x[:, 0:1] * 3.0, y, x + 1.0], -1), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("rotary_dim", [32, 24])
def test_cat_of_a_partial_rotary_row(rotary_dim, device):
    """GPT-NeoX's partial rotary embedding: rotate_half of the first rotary_dim columns, the rest
    passed through (extents 16 / 12 and 64 - rotary_dim)."""
    x = randn(19, 64, device=device)
    half = rotary_dim // 2
    check_kernel(partial_rotary, (x, rotary_dim),
                 lambda x, r: torch.cat([-x[:, half:rotary_dim], x[:, :half], x[:, rotary_dim:]], -1))


@helion.kernel()
def two_device_bounds(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile.begin:tile.end].sum() + x[tile]
    return out


@helion.kernel()
def stack_of_three(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.stack([x[tile], x[tile], x[tile]], dim=1)
    return out


@helion.kernel()
def split_into_thirds_inferred(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile].reshape(3, -1).reshape(-1)
    return out


@helion.kernel()
def cat_of_tiles(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([3 * x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.cat([x[tile], x[tile], x[tile]])
    return out


@pytest.mark.parametrize("kernel,error,message", [
    (two_device_bounds, exc.NotSupported, "start:start \\+ length"),
    (stack_of_three, exc.NotSupported, "power of two"),
    (split_into_thirds_inferred, exc.ShapeMismatch, "split into .*: each part must be a power of two"),
    (cat_of_tiles, exc.NotSupported, "torch.cat along a tile's dim .* whole dims of a constant size"),
])
def test_unsupported_forms_say_what_is_supported(kernel, error, message):
    x = randn(40) if kernel in (two_device_bounds, stack_of_three, split_into_thirds_inferred, cat_of_tiles) else randn(40, 16)
    with pytest.raises(error, match=message):
        kernel.bind((x,)).to_triton_code(kernel.bind((x,)).config_spec.default_config())


