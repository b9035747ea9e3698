"""Corpus: loop forms (tile over sizes/lists/ranges, registered block sizes, grid, nested device loops,
several top-level loops) and tile attributes."""
import re

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, code_without_comments, randn


@helion.kernel()
def scale_2d(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n]):
        out[tile_m, tile_n] = x[tile_m, tile_n] * 2.0 - 1.0
    return out


@pytest.mark.parametrize("shape", [(1, 1), (1, 130), (37, 3), (9, 17)])
def test_tile_list_2d(shape, device):
    check_kernel(scale_2d, (randn(*shape, device=device),), lambda x: x * 2.0 - 1.0)


@helion.kernel()
def tile_range(x: torch.Tensor, out: torch.Tensor, begin: int, end: int) -> torch.Tensor:
    for tile in hl.tile(begin, end):
        out[tile] = x[tile] * 10.0
    return out


@pytest.mark.parametrize("n,begin,end", [(50, 0, 50), (100, 7, 93), (64, 63, 64), (160, 29, 150)])
def test_tile_begin_end(n, begin, end, device):
    x, out = randn(n, device=device), randn(n, device=device)

    def reference(x, out, begin, end):
        expected = out.clone()
        expected[begin:end] = x[begin:end] * 10.0
        return expected

    check_kernel(tile_range, (x, out, begin, end), reference)


@helion.kernel()
def shared_block_size(x: torch.Tensor, y: torch.Tensor):
    n = x.size(0)
    block = hl.register_block_size(n)
    out_x = torch.empty_like(x)
    out_y = torch.empty_like(y)
    for tile in hl.tile(n, block_size=block):
        out_x[tile] = x[tile] + 1.0
    for tile in hl.tile(n, block_size=block):
        out_y[tile] = y[tile] * x[tile]
    return out_x, out_y


@pytest.mark.parametrize("n", [1, 100, 200])
def test_register_block_size_shared_by_loops(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    configs = check_kernel(shared_block_size, (x, y), lambda x, y: (x + 1.0, y * x))
    assert all(len(c["block_sizes"]) == 1 for c in configs)


@helion.kernel()
def tile_with_registered_last_dim(x: torch.Tensor) -> torch.Tensor:
    b, m, n = x.size()
    block_n = hl.register_block_size(n)
    out = torch.empty_like(x)
    for tile_b, tile_m, tile_n in hl.tile([b, m, n], block_size=[None, None, block_n]):
        out[tile_b, tile_m, tile_n] = torch.sigmoid(x[tile_b, tile_m, tile_n]) * 3.0
    return out


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 20), (2, 9, 5)])
def test_tile_block_size_list_with_registered(shape, device):
    x = randn(*shape, device=device)
    configs = check_kernel(tile_with_registered_last_dim, (x,), lambda x: torch.sigmoid(x) * 3.0)
    assert all(len(c["block_sizes"]) == 3 for c in configs)


@helion.kernel()
def grid_rows_tile_columns(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for row in hl.grid(m):
        for tile_n in hl.tile(n):
            out[row, tile_n] = x[row, tile_n] + bias[tile_n] * row
    return out


@pytest.mark.parametrize("shape", [(1, 1), (3, 50), (13, 7)])
def test_grid_with_nested_tile(shape, device):
    x, bias = randn(*shape, device=device), randn(shape[1], device=device)
    configs = check_kernel(
        grid_rows_tile_columns, (x, bias),
        lambda x, b: x + b[None, :] * torch.arange(x.size(0), dtype=torch.float64)[:, None])
    assert all(len(c["block_sizes"]) == 1 for c in configs)


@helion.kernel()
def grid_only(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for i in hl.grid(x.size(0)):
        out[i] = x[i] * 4.0 + i
    return out


@pytest.mark.parametrize("n", [1, 19])
def test_grid_only(n, device):
    x = randn(n, device=device)
    check_kernel(grid_only, (x,), lambda x: x * 4.0 + torch.arange(x.numel(), dtype=torch.float64))


@helion.kernel()
def nested_outer_inner(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    inner_block = hl.register_block_size(n)
    out = torch.empty_like(x)
    for tile_m, outer in hl.tile([m, n]):
        for inner in hl.tile(outer.begin, outer.end, block_size=inner_block):
            out[tile_m, inner] = x[tile_m, inner] * 2.0 + outer.begin
    return out


def _outer_begin(n: int, outer_block: int) -> torch.Tensor:
    return (torch.arange(n) // outer_block * outer_block).double()


@pytest.mark.parametrize("shape", [(1, 1), (2, 50), (3, 23)])
def test_device_loop_over_outer_range(shape, device):
    x = randn(*shape, device=device)

    def reference(x, config):
        outer_block = config["block_sizes"][2]  # slots: registered inner, tile_m, outer
        return x * 2.0 + _outer_begin(x.size(1), outer_block)[None, :]

    check_kernel(nested_outer_inner, (x,), reference, reference_takes_config=True)


@helion.kernel()
def grid_then_device_tiles(x: torch.Tensor) -> torch.Tensor:
    b, n = x.size()
    out = torch.empty_like(x)
    for row in hl.grid(b):
        for outer in hl.tile(n):
            for inner in hl.tile(outer.begin, outer.end):
                out[row, inner] = x[row, inner] - 1.0
    return out


@pytest.mark.parametrize("shape", [(1, 1), (2, 40)])
def test_grid_with_two_level_device_loops(shape, device):
    check_kernel(grid_then_device_tiles, (randn(*shape, device=device),), lambda x: x - 1.0)


@helion.kernel()
def two_dependent_loops(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    doubled = torch.empty_like(x)
    out = torch.empty_like(x)
    for tile in hl.tile(n):
        doubled[tile] = x[tile] * 2.0
    for tile in hl.tile(n):
        out[tile] = doubled[tile] + doubled[n - 1 - tile.index]
    return out


@pytest.mark.parametrize("n", [1, 37, 100])
def test_top_level_loops_run_in_order(n, device):
    x = randn(n, device=device)
    check_kernel(two_dependent_loops, (x,), lambda x: 2.0 * x + 2.0 * x.flip(0))


@helion.kernel()
def two_independent_loops(x: torch.Tensor, y: torch.Tensor):
    out_x = torch.empty_like(x)
    out_y = torch.empty_like(y)
    for tile_m, tile_n in hl.tile(x.size()):
        out_x[tile_m, tile_n] = x[tile_m, tile_n] * 0.5
    for tile in hl.tile(y.size(0)):
        out_y[tile] = y[tile] + 3.0
    return out_x, out_y


@pytest.mark.parametrize("shapes", [((1, 1), (1,)), ((7, 9), (130,))])
def test_several_top_level_loops(shapes, device):
    x, y = randn(*shapes[0], device=device), randn(*shapes[1], device=device)
    check_kernel(two_independent_loops, (x, y), lambda x, y: (x * 0.5, y + 3.0))


@helion.kernel()
def tile_attributes(x: torch.Tensor):
    n = x.size(0)
    index = torch.empty([n], dtype=torch.int32, device=x.device)
    begin = torch.empty([n], dtype=torch.int32, device=x.device)
    end = torch.empty([n], dtype=torch.int32, device=x.device)
    block = torch.empty([n], dtype=torch.int32, device=x.device)
    ident = torch.empty([n], dtype=torch.int32, device=x.device)
    for tile in hl.tile(n):
        index[tile] = tile.index
        begin[tile] = tile.begin + torch.zeros_like(tile.index)
        end[tile] = tile.end + torch.zeros_like(tile.index)
        block[tile] = tile.block_size + torch.zeros_like(tile.index)
        ident[tile] = tile.id + torch.zeros_like(tile.index)
    return index, begin, end, block, ident


def _tile_attributes_reference(x, config):
    n, size = x.size(0), config["block_sizes"][0]
    positions = torch.arange(n)
    begin = positions // size * size
    return positions, begin, torch.clamp(begin + size, max=n), torch.full([n], size), positions // size


@pytest.mark.parametrize("n", [1, 50, 129])
def test_tile_attributes(n, device):
    check_kernel(tile_attributes, (randn(n, device=device),), _tile_attributes_reference,
                 reference_takes_config=True)


@helion.kernel()
def causal_mask(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n]):
        keep = tile_n.index[None, :] <= tile_m.index[:, None]
        out[tile_m, tile_n] = torch.where(keep, x[tile_m, tile_n], -1.0)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (12, 12), (9, 20)])
def test_tile_index_arithmetic(shape, device):
    x = randn(*shape, device=device)
    check_kernel(causal_mask, (x,),
                 lambda x: torch.where(torch.ones_like(x, dtype=torch.bool).tril(), x, -1.0))


@helion.kernel()
def flattened_view(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    for tile in hl.tile(flat.size(0)):
        out[tile] = flat[tile] * flat[tile]
    return out.view(x.size())


@pytest.mark.parametrize("shape", [(1, 1), (6, 13), (2, 3, 7)])
def test_host_reshape_around_loop(shape, device):
    check_kernel(flattened_view, (randn(*shape, device=device),), lambda x: x * x)


@helion.kernel()
def unit_block_rows(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n], block_size=[1, None]):
        out[tile_m, tile_n] = x[tile_m, tile_n] + tile_m.begin
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 37)])
def test_literal_block_size(shape, device):
    x = randn(*shape, device=device)
    configs = check_kernel(unit_block_rows, (x,),
                           lambda x: x + torch.arange(x.size(0), dtype=torch.float64)[:, None])
    assert all(len(c["block_sizes"]) == 1 for c in configs)


@helion.kernel()
def cumulative_columns(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        running = hl.zeros([tile_m], dtype=torch.float32)
        for j in hl.grid(n):
            running = running + x[tile_m, j]
            out[tile_m, j] = running
    return out


@pytest.mark.parametrize("shape", [(1, 1), (9, 13)])
def test_grid_as_device_loop_with_carry(shape, device):
    check_kernel(cumulative_columns, (randn(*shape, device=device),), lambda x: x.cumsum(1))


@helion.kernel()
def bounded_block_size(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    block = hl.register_block_size(16, 64)
    out = torch.empty_like(x)
    for tile in hl.tile(n, block_size=block):
        out[tile] = x[tile] - tile.block_size
    return out


@pytest.mark.parametrize("n", [1, 50, 300])
def test_register_block_size_with_bounds(n, device):
    def reference(x, config):
        return x - config["block_sizes"][0]

    configs = check_kernel(bounded_block_size, (randn(n, device=device),), reference,
                           reference_takes_config=True, n_random=5)
    assert all(16 <= c["block_sizes"][0] <= 64 for c in configs)


@helion.kernel(static_shapes=False)
def interleaved_column_sums(x: torch.Tensor, programs: int) -> torch.Tensor:
    """Column sums in `programs` fp32 partial rows; program p takes row blocks p, p + programs, ...,
    so the last step of some programs is an empty range whose end (m) is below its begin."""
    m, n = x.size()
    block_r = hl.register_block_size(1, 16)
    steps = helion.cdiv(helion.cdiv(m, block_r), programs)
    partial = x.new_empty((programs, n), dtype=torch.float32)
    for tile_p, tile_n in hl.tile([programs, n], block_size=[1, None]):
        acc = hl.zeros([tile_n], dtype=torch.float32)
        for step in hl.grid(steps):
            first = (step * programs + tile_p.begin) * block_r
            for tile_r in hl.tile(first, min(first + block_r, m), block_size=block_r):
                acc = acc + torch.sum(x[tile_r, tile_n].to(torch.float32), dim=0)
        partial[tile_p.begin, tile_n] = acc
    return partial.sum(0)


UNROLLED_ROW_LOOP = [helion.Config(block_sizes=[4, 32], range_unroll_factors=[1, unroll]) for unroll in (2, 4)]


@pytest.mark.parametrize("shape,programs", [((70, 40), 5), ((203, 24), 13)])
def test_unrolled_loop_over_empty_inverted_ranges(shape, programs, device):
    # The GPU case: Triton 3.6's unroller ran the remainder of an unrolled empty range with
    # end < begin from below begin, adding rows of other programs (notes/dsl_gaps_kernels.md, gap 13).
    check_kernel(interleaved_column_sums, (randn(*shape, device=device), programs), lambda x, p: x.sum(0),
                 extra_configs=UNROLLED_ROW_LOOP, n_random=1)


def test_unrolled_loops_over_runtime_bounds_end_at_least_at_their_begin():
    bound = interleaved_column_sums.bind((torch.randn(70, 40), 5))
    unrolled = code_without_comments(bound.to_triton_code(UNROLLED_ROW_LOOP[0]))
    (row_loop,) = [line.strip() for line in unrolled.splitlines() if "loop_unroll_factor=2" in line]
    begin, end = re.fullmatch(r"for \w+ in tl\.range\((\w+), (.+), _BLOCK_SIZE_\d+, loop_unroll_factor=2\):",
                              row_loop).groups()
    assert end.startswith("tl.maximum(") and end.endswith(f", {begin})"), row_loop
    plain = code_without_comments(bound.to_triton_code(helion.Config(block_sizes=[4, 32])))
    assert "tl.maximum" not in plain


@helion.kernel(static_shapes=False)
def grid_cell_count(x: torch.Tensor, begin: int, end: int) -> torch.Tensor:
    n = x.size(0)
    out = torch.empty_like(x)
    for tile in hl.tile(n):
        count = hl.zeros([tile], dtype=torch.float32)
        for i, j in hl.grid([begin, begin], [end, end]):
            count = count + 1.0
        out[tile] = count
    return out


@pytest.mark.parametrize("begin,end", [(5, 2), (2, 5), (3, 3)])
def test_flattened_loop_over_inverted_ranges_is_empty(begin, end, device):
    # A flattened loop runs the product of its spans: two negative spans must not make a positive count.
    check_kernel(grid_cell_count, (randn(7, device=device), begin, end),
                 lambda x, b, e: torch.full_like(x, float(max(e - b, 0) ** 2)),
                 extra_configs=[helion.Config(flatten_loops=[True]), helion.Config(flatten_loops=[True],
                                                                                  range_unroll_factors=[2])])


@helion.kernel()
def previous_row_kept(x: torch.Tensor) -> torch.Tensor:
    """out[r] = x[r - 1] (x[0] for r = 0): `ahead` is carried across the row loop and overwritten in
    place, while `current` names its value from before (a no-op cast of the carried variable)."""
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        ahead = x[0, tile_n]
        for row in hl.grid(m):
            current = ahead.to(x.dtype)
            ahead = x[row, tile_n]
            out[row, tile_n] = current
    return out


@pytest.mark.parametrize("shape", [(1, 3), (5, 70)])
def test_a_name_bound_to_a_carried_value_keeps_it_when_the_carried_variable_changes(shape, device):
    x = randn(*shape, device=device)
    check_kernel(previous_row_kept, (x,), lambda x: torch.cat([x[:1], x[:-1]]))
