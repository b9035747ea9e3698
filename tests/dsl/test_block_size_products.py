"""Corpus: a registered block size times a power of two (`block_k * 2`, `2 * block_k`) in device code
names the dim of its tiles merged with that constant, as `tile.block_size * 2` does, so a slice of
that length matches a [tile, 2] value viewed as one dim (Helion's newer int4_gemm); and integers
convert to bfloat16 as PyTorch converts them (through float32; Triton's interpreter gave NaN)."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn
from .test_stack_and_merged_dims import pack_int4, unpack_int4


@helion.kernel(static_shapes=False)
def int4_matmul_widened(a: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    """a @ unpacked int4 weights, A's slice as long as twice the registered block (Helion's newer
    int4_gemm): the nibbles sign-extended in int32, then cast to A's dtype."""
    block_k = hl.register_block_size(a.size(1) // 2)
    out = torch.empty([a.size(0), packed.size(1)], dtype=torch.float32, device=a.device)
    for tile_m, tile_n in hl.tile(out.size()):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(packed.size(0), block_size=block_k):
            begin = tile_k.begin * 2
            length = block_k * 2
            pair = packed[tile_k, tile_n]
            low = (pair & 0xF).to(torch.int32)
            low = torch.where(low >= 8, low - 16, low)
            high = (pair >> 4).to(torch.int32)
            unpacked = torch.stack([low.to(a.dtype), high.to(a.dtype)], dim=1).reshape(
                tile_k.block_size * 2, tile_n.block_size)
            acc = hl.dot(a[tile_m, begin:(begin + length)], unpacked, acc=acc)
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m,k,n", [(37, 90, 50), (1, 2, 1), (5, 258, 17)])
def test_a_slice_as_long_as_a_registered_block_times_two_matches_the_merged_tile(m, k, n, dtype, device):
    packed = pack_int4(randint(-8, 8, k, n, device="cpu").to(torch.int8)).to(device)
    a = randn(m, k, dtype=dtype, device=device)
    exact = dtype == torch.float32 and device == "cpu"  # a GPU runs float32 dots as TF32
    check_kernel(int4_matmul_widened, (a, packed), lambda a, p: a @ unpack_int4(p).double(),
                 rtol=1e-4 if exact else 2e-2, atol=1e-3 if exact else 0.25)


@helion.kernel()
def pair_sums(x: torch.Tensor) -> torch.Tensor:
    """out[i, j] = x[i, 2j] + x[i, 2j + 1], each tile of pairs read as one slice of 2 * block."""
    m, n2 = x.shape
    out = torch.empty([m, n2 // 2], dtype=x.dtype, device=x.device)
    block = hl.register_block_size(n2 // 2)
    for tile_m in hl.tile(m):
        for tile_j in hl.tile(n2 // 2, block_size=block):
            start = 2 * tile_j.begin
            row = x[tile_m, start:start + 2 * block]
            out[tile_m, tile_j] = row.reshape(tile_m.block_size, block, 2).sum(-1)
    return out


@pytest.mark.parametrize("m,n", [(7, 38), (1, 2), (3, 130)])
def test_two_times_a_registered_block_splits_back_into_block_and_two(m, n, device):
    x = randn(m, n, device=device)
    check_kernel(pair_sums, (x,), lambda x: x.reshape(x.shape[0], -1, 2).sum(-1))


@helion.kernel()
def to_bfloat16(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile].to(torch.bfloat16)
    return out


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool])
def test_integers_convert_to_bfloat16_as_pytorch_converts_them(dtype, device):
    if dtype == torch.bool:
        x = randint(0, 2, 37, device=device).bool()
    elif dtype == torch.uint8:
        x = randint(0, 256, 37, device=device).to(dtype)
    elif dtype == torch.int8:
        x = randint(-128, 128, 37, device=device).to(dtype)
    else:  # values across int32's range; 2**24 + 2**16 + 1, which PyTorch rounds to 2**24 through
        # float32 (directly: 2**24 + 2**17); ties of bfloat16's rounding (383 -> 384, 385 -> 384)
        spread = randint(-2**31, 2**31 - 1, 41, device=device)
        x = torch.cat([spread, torch.tensor([2**24 + 2**16 + 1, -(2**24 + 2**16 + 1), 383, 385, -7, 0, 1],
                                            device=device)]).to(dtype)
    out = to_bfloat16(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out.cpu(), x.cpu().to(torch.bfloat16))


@helion.kernel()
def odd_factor_slice(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    out = torch.zeros([m, b.size(1)], dtype=a.dtype, device=a.device)
    block_k = hl.register_block_size(k // 3)
    for tile_m in hl.tile(m):
        for tile_k in hl.tile(k // 3, block_size=block_k):
            start = tile_k.begin * 3
            out[tile_m, :] += hl.dot(a[tile_m, start:start + block_k * 3], b[tile_k, :])
    return out


def test_a_block_times_a_factor_not_a_power_of_two_is_only_a_number():
    with pytest.raises(exc.ShapeMismatch, match="matrix product contracts"):
        odd_factor_slice.bind((randn(4, 48), randn(16, 5)))
