"""Tensor descriptors for accesses whose leading dims are indexed by scalars (`y[b, h, tile, :]`): the
descriptor merges those dims into the rows of the first block dim ([B * H * S, D]), where TMA bounds
only the last row of the whole tensor. A partial tile's rows past its slice belong to the next slice,
so loads zero them and stores of partial tiles go through pointers; tensors whose leading dims do not
form one run of rows (a transposed view) take the pointer path at launch. Also the warp-specialized
peeled loop: one loop under the launch-time flag "the span divides by the block", and a
`warp_specialize` that holds only where every load uses a descriptor."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, code_without_comments, randn
from .test_launch_limits import launches_of


@helion.kernel(static_shapes=False)
def slice_sums_times_rows(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """out[b, h, i, :] = x[b, h, i, :] * sum over j of y[b, h, j, :], a loop over y's rows."""
    batch, heads, m, d = x.size()
    n = y.size(2)
    d = hl.specialize(d)
    block_m = hl.register_block_size(m)
    out = torch.empty_like(x)
    for tile_m, tile_h, tile_b in hl.tile([m, heads, batch], block_size=[block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        acc = hl.zeros([d], dtype=torch.float32)
        for tile_n in hl.tile(n):
            acc = acc + torch.sum(y[b, h, tile_n, :].to(torch.float32), dim=0)
        out[b, h, tile_m, :] = (x[b, h, tile_m, :].to(torch.float32) * acc[None, :]).to(out.dtype)
    return out


@helion.kernel(static_shapes=False)
def batched_matmul(a: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """a @ w and its double. Two stores: `indexing` is sized by the default structure (the loop
    not split), whose sites are a, w and the stores; the split loop's second copies of a and w
    take the stores' places."""
    batch, m, k = a.size()
    n = w.size(2)
    out = torch.empty([batch, m, n], dtype=torch.float32, device=a.device)
    doubled = torch.empty([batch, m, n], dtype=torch.float32, device=a.device)
    for tile_m, tile_n, tile_b in hl.tile([m, n, batch], block_size=[None, None, 1]):
        b = tile_b.begin
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, a[b, tile_m, tile_k], w[b, tile_k, tile_n])
        out[b, tile_m, tile_n] = acc
        doubled[b, tile_m, tile_n] = acc * 2
    return out, doubled


def batched_matmul_reference(a, w):
    return a @ w, 2 * (a @ w)


def slice_sums_reference(x, y):
    return (x * y.sum(dim=2, keepdim=True)).to(torch.float16)


DESCRIBED = helion.Config(block_sizes=[16, 8], indexing=["tensor_descriptor"] * 3)
WARP_SPECIALIZED = {"block_sizes": [16, 16, 16], "indexing": ["tensor_descriptor"] * 4, "num_warps": 4,
                    "range_warp_specializes": [True], "range_peel_tails": [True]}


def flags(constants: dict, prefix: str) -> list:
    return [value for name, value in constants.items() if name.startswith(prefix)]


@pytest.mark.parametrize("batch,heads,m,n", [(2, 3, 20, 13), (1, 1, 1, 1), (3, 2, 16, 8), (2, 2, 33, 40)])
def test_merged_rows_load_whole_and_partial_tiles(batch, heads, m, n, device):
    """Tails of 13 and 1 rows read, through the merged descriptor, rows of the next (b, h) slice;
    the result must not include them."""
    x = randn(batch, heads, m, 16, dtype=torch.float16, device=device)
    y = randn(batch, heads, n, 16, dtype=torch.float16, device=device)
    check_kernel(slice_sums_times_rows, (x, y), slice_sums_reference, extra_configs=[DESCRIBED], n_random=2,
                 rtol=1e-2, atol=1e-2)
    _, launched = launches_of(slice_sums_times_rows, (x, y), DESCRIBED, run=False)
    ((_, constants),) = launched
    assert flags(constants, "_TMA_y") == [True]  # contiguous: y's rows merge


def test_merged_rows_need_leading_dims_that_form_one_run_of_rows(device):
    """A transposed view's (b, h) slices are not consecutive rows: the launcher takes pointers."""
    x = randn(2, 3, 20, 16, dtype=torch.float16, device=device)
    y = randn(2, 13, 3, 16, dtype=torch.float16, device=device).transpose(1, 2)
    check_kernel(slice_sums_times_rows, (x, y), slice_sums_reference, extra_configs=[DESCRIBED], n_random=0,
                 rtol=1e-2, atol=1e-2)
    _, launched = launches_of(slice_sums_times_rows, (x, y), DESCRIBED, run=False)
    ((_, constants),) = launched
    assert flags(constants, "_TMA_y") == [False]
    assert flags(constants, "_TMA_x") == [True]


@helion.kernel(static_shapes=False)
def scaled_by_slice_values(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """out[b, i, :] = x[b, i, :] * s[b, i]: s's tile is one merged dim."""
    batch, m, n = x.size()
    n = hl.specialize(n)
    out = torch.empty_like(x)
    for tile_m, tile_b in hl.tile([m, batch], block_size=[None, 1]):
        b = tile_b.begin
        out[b, tile_m, :] = x[b, tile_m, :] * s[b, tile_m][:, None]
    return out


def test_one_dimensional_merged_rows_keep_pointers(device):
    """A merged dim that is the innermost one starts its slices off 16-byte boundaries (9 fp32
    values a slice here): no descriptor."""
    x, s = randn(3, 9, 16, device=device), randn(3, 9, device=device)
    config = helion.Config(block_sizes=[8], indexing=["tensor_descriptor"] * 3)
    check_kernel(scaled_by_slice_values, (x, s), lambda x, s: x * s[:, :, None], extra_configs=[config], n_random=0)
    _, launched = launches_of(scaled_by_slice_values, (x, s), config, run=False)
    ((_, constants),) = launched
    assert flags(constants, "_TMA_s") == []  # statically False: no flag for the launcher to compute
    assert flags(constants, "_TMA_x") == [True]


def test_merged_row_accesses_emit_descriptors_over_merged_rows_and_zero_tail_rows():
    x, y = randn(2, 3, 20, 16, dtype=torch.float16), randn(2, 3, 13, 16, dtype=torch.float16)
    source = code_without_comments(slice_sums_times_rows.bind((x, y)).to_triton_code(DESCRIBED))
    assert "tl.make_tensor_descriptor(y, [y_size_0 * y_size_1 * y_size_2, y_size_3]" in source
    assert "tl.where(mask_" in source  # the loop tile's rows past the slice
    # the store's tile may be partial (run-time m): a merged descriptor would write the next slice
    assert "tl.make_tensor_descriptor(out" not in source


@pytest.mark.parametrize("k", [32, 37, 5])
def test_warp_specialized_peeled_loop_is_one_loop_under_a_divisibility_flag(k, device):
    a = randn(2, 19, k, dtype=torch.float16, device=device)
    w = randn(2, k, 24, dtype=torch.float16, device=device)
    config = helion.Config(**WARP_SPECIALIZED)
    check_kernel(batched_matmul, (a, w), batched_matmul_reference, extra_configs=[config], n_random=0,
                 rtol=1e-2, atol=1e-2)
    source = code_without_comments(batched_matmul.bind((a, w)).to_triton_code(config))
    assert source.count("warp_specialize=_WARP_SPECIALIZE_0") == 2
    assert "if _WHOLE_TILES_0:" in source
    _, launched = launches_of(batched_matmul, (a, w), config, run=False)
    ((_, constants),) = launched
    assert constants["_WHOLE_TILES_0"] == (k % 16 == 0)
    # a's rows of 37 or 5 fp16 values are not 16-byte aligned: no descriptor for a, no specialization
    assert constants["_WARP_SPECIALIZE_0"] is (k == 32) is all(flags(constants, "_TMA_"))


def test_warp_specialization_needs_every_load_through_a_descriptor(device):
    """Triton 3.6's Hopper warp specialization aborts on pointer loads: with one, the flag is False."""
    a, w = randn(2, 19, 40, dtype=torch.float16, device=device), randn(2, 40, 24, dtype=torch.float16, device=device)
    config = helion.Config(**{**WARP_SPECIALIZED, "indexing": ["pointer"] + ["tensor_descriptor"] * 3})
    check_kernel(batched_matmul, (a, w), batched_matmul_reference, extra_configs=[config], n_random=0,
                 rtol=1e-2, atol=1e-2)
    _, launched = launches_of(batched_matmul, (a, w), config, run=False)
    ((_, constants),) = launched
    assert constants["_WARP_SPECIALIZE_0"] is False
