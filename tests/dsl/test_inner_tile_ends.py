"""Block accesses (tensor descriptors, block pointers) of tiles that end inside their tensor: a loop
`hl.tile(0, end)` whose end is not the tensor's size (a length read on the device, a causal
`min(tile_m.end, n)`). The block reads past the tile's end, up to the tensor's bound, and the
elements there are zeroed after the load, as a masked pointer load leaves them; stores of such
tiles go through pointers, and so do tiles of the innermost dim that may start off a 16-byte
boundary. Also the rule that keeps Triton 3.6's Hopper warp specialization from aborting: only a
kernel of one loop specializes it."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, code_without_comments, randn
from .test_launch_limits import launches_of
from .test_matmul import matmul_split_k, matmul_tolerance
from .test_merged_row_descriptors import flags


@helion.kernel(static_shapes=False)
def padded_weighted_sums(w: torch.Tensor, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """out[b, i, :] = sum over j < lengths[b] of w[b, i, j] * x[b, j, :]: rows of a padded batch,
    whose padding (j >= lengths[b]) holds anything."""
    batch, m, n = w.size()
    d = hl.specialize(x.size(2))
    out = torch.empty([batch, m, d], dtype=torch.float32, device=w.device)
    for tile_m, tile_b in hl.tile([m, batch], block_size=[None, 1]):
        b = tile_b.begin
        length = lengths[b]
        acc = hl.zeros([tile_m, d], dtype=torch.float32)
        for tile_n in hl.tile(0, length):
            acc = hl.dot(w[b, tile_m, tile_n], x[b, tile_n, :], acc=acc)
        out[b, tile_m, :] = acc
    return out


@helion.kernel(static_shapes=False)
def padded_matrix_product(w: torch.Tensor, x: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """out = w[:, :length] @ x[:length]: the 2-D form, where block pointers apply too."""
    m, n = w.size()
    d = hl.specialize(x.size(1))
    out = torch.empty([m, d], dtype=torch.float32, device=w.device)
    for tile_m in hl.tile(m):
        valid = length[0]
        acc = hl.zeros([tile_m, d], dtype=torch.float32)
        for tile_n in hl.tile(0, valid):
            acc = hl.dot(w[tile_m, tile_n], x[tile_n, :], acc=acc)
        out[tile_m, :] = acc
    return out


@helion.kernel(static_shapes=False)
def lower_triangular_product(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """out = tril(w) @ x, each row tile looping over the key tiles up to its end (a causal loop)."""
    m, n = w.size()
    d = hl.specialize(x.size(1))
    out = torch.empty([m, d], dtype=torch.float32, device=w.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m, d], dtype=torch.float32)
        for tile_n in hl.tile(0, min(tile_m.end, n)):
            weights = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], w[tile_m, tile_n], 0.0)
            acc = hl.dot(weights.to(x.dtype), x[tile_n, :], acc=acc)
        out[tile_m, :] = acc
    return out


def padded_inputs(batch, m, n, lengths, d=16):
    """fp16 inputs whose padding is NaN: any padding element that reaches a sum shows."""
    w, x = randn(batch, m, n, dtype=torch.float16), randn(batch, n, d, dtype=torch.float16)
    for b, length in enumerate(lengths):
        w[b, :, length:] = float("nan")
        x[b, length:] = float("nan")
    return w, x, torch.tensor(lengths, dtype=torch.int32, device=w.device)


def padded_reference(w, x, lengths):
    out = torch.zeros(w.size(0), w.size(1), x.size(2), dtype=torch.float64)
    for b, length in enumerate(lengths.tolist()):
        out[b] = w[b, :, :length] @ x[b, :length]
    return out


DESCRIBED = helion.Config(block_sizes=[16, 16], indexing=["pointer"] + ["tensor_descriptor"] * 3)


@pytest.mark.parametrize("m,n,lengths", [(20, 48, [48, 37, 5]), (16, 32, [1, 32]), (1, 17, [17, 16])])
def test_descriptor_loads_zero_the_elements_past_a_device_tile_end(m, n, lengths, device):
    args = padded_inputs(len(lengths), m, n, lengths)
    check_kernel(padded_weighted_sums, args, padded_reference, extra_configs=[DESCRIBED], n_random=2,
                 rtol=1e-2, atol=1e-2)
    _, launched = launches_of(padded_weighted_sums, args, DESCRIBED, run=False)
    ((_, constants),) = launched
    assert flags(constants, "_TMA_w") == [n * 2 % 16 == 0]  # w's rows of n fp16 values: 16-byte aligned?
    assert flags(constants, "_TMA_x") == [True]


@pytest.mark.parametrize("indexing", ["block_ptr", "tensor_descriptor"])
@pytest.mark.parametrize("valid", [40, 23, 1])
def test_block_loads_of_a_loop_ending_inside_the_tensor(indexing, valid, device):
    (w,), (x,), _ = padded_inputs(1, 24, 40, [valid])
    length = torch.tensor([valid], dtype=torch.int32, device=device)
    config = helion.Config(block_sizes=[16, 16], indexing=["pointer", indexing, indexing, "pointer"])
    check_kernel(padded_matrix_product, (w, x, length), lambda w, x, length: w[:, :valid] @ x[:valid],
                 extra_configs=[config], n_random=1, rtol=1e-2, atol=1e-2)


def test_a_tile_ending_inside_its_tensor_loads_through_a_block_and_zeroes_past_its_end():
    w, x = randn(24, 40, dtype=torch.float16), randn(40, 16, dtype=torch.float16)
    length = torch.tensor([23], dtype=torch.int32)
    config = helion.Config(block_sizes=[16, 16], indexing=["pointer", "block_ptr", "tensor_descriptor", "pointer"])
    source = code_without_comments(padded_matrix_product.bind((w, x, length)).to_triton_code(config))
    assert "tl.make_block_ptr(w," in source and "tl.make_tensor_descriptor(x," in source
    assert source.count("tl.where(mask_") == 2  # each loaded tile, past the loop's end


def lower_triangular_reference(w, x):
    return torch.tril(w) @ x


WARP_SPECIALIZED = {"block_sizes": [16, 16], "indexing": ["tensor_descriptor"] * 3, "num_warps": 4,
                    "range_warp_specializes": [True]}


@pytest.mark.parametrize("peel", [False, True])
@pytest.mark.parametrize("m,n", [(40, 40), (33, 21), (1, 1)])
def test_only_a_kernel_of_one_loop_is_warp_specialized(peel, m, n, device):
    """The causal loop's end is a device value: a peeled tail is a second loop, after which Triton
    3.6's warp specialization would abort compiling, so the flag is False there."""
    w, x = randn(m, n, dtype=torch.float16), randn(n, 16, dtype=torch.float16)
    config = helion.Config(**WARP_SPECIALIZED, range_peel_tails=[peel])
    check_kernel(lower_triangular_product, (w, x), lower_triangular_reference, extra_configs=[config], n_random=2,
                 rtol=1e-2, atol=1e-2)
    _, launched = launches_of(lower_triangular_product, (w, x), config, run=False)
    ((_, constants),) = launched
    aligned = n * 2 % 16 == 0  # w's rows: 16-byte aligned for a descriptor
    assert constants["_WARP_SPECIALIZE_0"] is (aligned and not peel)


@pytest.mark.parametrize("split", [2, 32])
def test_tiles_of_the_innermost_dim_start_16_byte_aligned_or_keep_pointers(split, device):
    """A split-K chunk's tiles start at a device offset (multiples of 2 fp32 values, 8 bytes, at
    split 2). Split-K descriptor loads along the innermost dim raised CUDA's illegal instruction on
    an H100; a device offset is not known 16-byte aligned, so x keeps pointers; y's chunk runs
    along its rows, where any start is fine."""
    x, y = randn(16, 150), randn(150, 24)
    config = helion.Config(block_sizes=[16, 16, split, 16], indexing=["tensor_descriptor"] * 2)
    check_kernel(matmul_split_k, (x.to(device), y.to(device)), lambda x, y: x @ y, extra_configs=[config],
                 n_random=0, **matmul_tolerance(device))
    _, launched = launches_of(matmul_split_k, (x, y), config, run=False)
    ((_, constants),) = launched
    assert flags(constants, "_TMA_x") == [] and flags(constants, "_TMA_y") == [True]
