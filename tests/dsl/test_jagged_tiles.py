"""Corpus: `hl.jagged_tile(lengths)`, Helion's loop over a ragged inner dim: it runs to the longest
of `lengths` (one end per lane of the enclosing tiles) and masks each lane at its own end, in loads,
stores and reductions of values that hold the lanes' dims. A scalar length (an `hl.grid` row's) is a
plain tile loop's end. Kernels in the style of Helion's jagged_sum / jagged_mean examples."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn


@helion.kernel()
def jagged_row_sums(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Per sequence b and column m: the sum of rows offsets[b]..offsets[b+1] of `values` [rows, M]."""
    m = values.size(1)
    batches = offsets.size(0) - 1
    out = torch.empty([batches, m], dtype=values.dtype, device=values.device)
    flat = values.view(-1)
    for tile_b in hl.tile(batches):
        starts = offsets[tile_b]
        lengths = offsets[tile_b.index + 1] - starts
        for tile_m in hl.tile(m):
            acc = hl.zeros([tile_b, tile_m], dtype=torch.float32)
            for tile_k in hl.jagged_tile(lengths):
                rows = starts[:, None] + tile_k.index[None, :]
                acc = acc + hl.load(flat, [rows[:, :, None] * m + tile_m.index[None, None, :]]).sum(dim=1)
            out[tile_b, tile_m] = acc.to(out.dtype)
    return out


@helion.kernel()
def jagged_row_max_and_scaled(values: torch.Tensor, offsets: torch.Tensor):
    """Per sequence: the largest value of its rows (column 0) and its rows written back halved."""
    batches = offsets.size(0) - 1
    largest = torch.empty([batches], dtype=values.dtype, device=values.device)
    halved = torch.full_like(values, 7.0)
    for tile_b in hl.tile(batches):
        starts = offsets[tile_b]
        lengths = offsets[tile_b.index + 1] - starts
        best = hl.full([tile_b], float("-inf"), dtype=torch.float32)
        for tile_k in hl.jagged_tile(lengths):
            rows = starts[:, None] + tile_k.index[None, :]
            block = hl.load(values, [rows, 0])
            best = torch.maximum(best, block.amax(dim=1))
            hl.store(halved, [rows, 0], block * 0.5)
        largest[tile_b] = best
    return largest, halved


@helion.kernel()
def grid_jagged_sums(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    m = values.size(1)
    batches = offsets.size(0) - 1
    out = torch.zeros([batches, m], dtype=values.dtype, device=values.device)
    for b in hl.grid(batches):
        start = offsets[b]
        acc = hl.zeros([m], dtype=torch.float32)
        for tile_k in hl.jagged_tile(offsets[b + 1] - start):
            acc = acc + values[start + tile_k.index, :].sum(dim=0)
        out[b, :] = acc
    return out


def sequences(lengths: list, m: int, device):
    offsets = torch.tensor([0] + lengths).cumsum(0).to(device)
    return randn(int(sum(lengths)), m, device=device), offsets


def segment_reference(reduce):
    def reference(values, offsets):
        bounds = offsets.tolist()
        return torch.stack([reduce(values[a:b]) for a, b in zip(bounds, bounds[1:])])
    return reference


LENGTHS = [[5, 0, 17, 1, 33, 2, 9], [1], [40, 3]]


@pytest.mark.parametrize("lengths", LENGTHS)
def test_jagged_sums_stop_at_each_lane(lengths, device):
    values, offsets = sequences(lengths, 21, device)
    check_kernel(jagged_row_sums, (values, offsets), segment_reference(lambda rows: rows.sum(0)))
    check_kernel(grid_jagged_sums, (values, offsets), segment_reference(lambda rows: rows.sum(0)))


@pytest.mark.parametrize("lengths", [[5, 3, 17, 1, 33, 2, 9], [1], [40, 3]])
def test_jagged_max_and_stores_stop_at_each_lane(lengths, device):
    values, offsets = sequences(lengths, 3, device)

    def reference(values, offsets):
        halved = values.clone()
        halved[:, 0] *= 0.5
        halved[:, 1:] = 7.0
        return segment_reference(lambda rows: rows[:, 0].max())(values, offsets), halved

    check_kernel(jagged_row_max_and_scaled, (values, offsets), reference)


def test_lengths_read_past_the_batch_do_not_extend_the_loop(device):
    # a batch tile wider than the batch: lanes past it must not lengthen the jagged loop, which
    # would read rows of no sequence (their length would come from a masked load)
    values, offsets = sequences([3, 2, 4], 5, device)
    check_kernel(jagged_row_sums, (values, offsets), segment_reference(lambda rows: rows.sum(0)),
                 extra_configs=[helion.Config(block_sizes=[64, 8, 2])])


@helion.kernel()
def vtile_sums_of_squares(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Per sequence: the sum of its values squared, over `hl.vtile` (the name of hl.jagged_tile in
    Helion's jagged_sum and jagged_hstu_attn examples)."""
    batches = offsets.size(0) - 1
    out = torch.empty([batches], dtype=values.dtype, device=values.device)
    for tile_b in hl.tile(batches):
        starts = offsets[tile_b]
        total = hl.zeros([tile_b], dtype=torch.float32)
        for tile_k in hl.vtile(offsets[tile_b.index + 1] - starts):
            block = values[starts[:, None] + tile_k.index[None, :]]
            total = total + (block * block).sum(dim=1)
        out[tile_b] = total
    return out


@pytest.mark.parametrize("lengths", LENGTHS)
def test_vtile_is_jagged_tile(lengths, device):
    values, offsets = sequences(lengths, 1, device)
    check_kernel(vtile_sums_of_squares, (values.view(-1), offsets), segment_reference(lambda rows: (rows * rows).sum()))


@helion.kernel()
def jagged_at_top_level(lengths: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(lengths)
    for tile in hl.jagged_tile(lengths):
        out[tile] = lengths[tile]
    return out


def test_a_jagged_tile_needs_an_enclosing_loop():
    lengths = randint(0, 5, 8)
    with pytest.raises(exc.NotSupported, match="jagged_tile is only valid inside"):
        jagged_at_top_level.bind((lengths,))
