"""Corpus: parts and repeats of device values along whole dims: `v[:, a:b:s]`, `v[..., i]` (negative
bounds, steps, None and Ellipsis beside them), `torch.narrow` / `select` / `chunk` / `split` /
`unbind`, `F.glu`, `torch.repeat_interleave`, `Tensor.repeat` and `torch.tile` (function and method
forms), `torch.diagonal` / `diag` / `trace`, on dims whose size is a power of two and on odd ones, in float32, bf16 and bool;
diagonals of one tile's dim taken twice (`x[tile, tile]`); and the forms refused with what is supported."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randn


@helion.kernel()
def subscripts(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    stepped = torch.empty([m, 5], dtype=x.dtype, device=x.device)
    ends = torch.empty([m], dtype=x.dtype, device=x.device)
    tail = torch.empty([m, 1, 3], dtype=x.dtype, device=x.device)
    one = torch.empty([m, 1], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :] * 2.0
        stepped[tile, :] = v[:, 1:11:2]
        ends[tile] = v[..., -1] + v[:, 0]
        tail[tile, :, :] = v[:, None, -3:]
        one[tile, :] = v[:, 4:5] - v[:, -9:-8]
    return stepped, ends, tail, one


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m,n", [(1, 16), (45, 13)])
def test_slices_and_integers_of_a_value(m, n, dtype, device):
    x = randn(m, n, dtype=dtype, device=device)

    def reference(x):
        v = x.float() * 2.0
        return v[:, 1:11:2], v[..., -1] + v[:, 0], v[:, None, -3:], v[:, 4:5] - v[:, -9:-8]

    check_kernel(subscripts, (x,), reference)


@helion.kernel()
def functions(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    glued = torch.empty([m, n // 2], dtype=x.dtype, device=x.device)
    chunked = torch.empty([m, 4], dtype=x.dtype, device=x.device)
    narrowed = torch.empty([m, 3], dtype=x.dtype, device=x.device)
    split = torch.empty([m, 5], dtype=x.dtype, device=x.device)
    unbound = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        glued[tile, :] = torch.nn.functional.glu(v, -1)
        first, second, third = v.chunk(3, dim=1)
        chunked[tile, :] = first * 2.0 + second - third[:, 0:4]
        narrowed[tile, :] = torch.narrow(v, 1, 1, 3) + v.narrow(-1, -3, 3)
        a, b = torch.split(v, [7, n - 7], dim=1)
        c = v.split(5, 1)
        split[tile, :] = a[:, 2:] + b[:, :5] * c[1] - c[-1][:, :1]
        rows = v[:, :3].unbind(1)
        unbound[tile] = rows[0] * rows[2] - torch.select(v, 1, -1) + torch.unbind(v, -1)[1]
    return glued, chunked, narrowed, split, unbound


def functions_reference(x):
    n = x.size(1)
    first, second, third = x.chunk(3, dim=1)
    a, b = torch.split(x, [7, n - 7], dim=1)
    c = x.split(5, 1)
    rows = x[:, :3].unbind(1)
    return (torch.nn.functional.glu(x, -1), first * 2.0 + second - third[:, 0:4], x.narrow(1, 1, 3) + x.narrow(-1, -3, 3),
            a[:, 2:] + b[:, :5] * c[1] - c[-1][:, :1], rows[0] * rows[2] - x.select(1, -1) + x.unbind(-1)[1])


@pytest.mark.parametrize("m,n", [(1, 12), (37, 12)])
def test_narrow_select_chunk_split_unbind_glu(m, n, device):
    check_kernel(functions, (randn(m, n, device=device),), functions_reference)


@helion.kernel()
def repeats(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    interleaved = torch.empty([m, 3 * n], dtype=x.dtype, device=x.device)
    repeated = torch.empty([2, m, 2 * n], dtype=x.dtype, device=x.device)
    tiled = torch.empty([m, 4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        interleaved[tile, :] = torch.repeat_interleave(v, 3, dim=1) + v.repeat_interleave(3, -1)
        repeated[:, tile, :] = v.repeat(2, 1, 2)
        tiled[tile, :] = torch.tile(v[:, 1:3], (2,)) - v[:, :1].tile((1, 4))
    return interleaved, repeated, tiled


@pytest.mark.parametrize("m,n", [(1, 8), (45, 13)])
def test_repeat_interleave_repeat_and_tile(m, n, device):
    x = randn(m, n, device=device)
    check_kernel(repeats, (x,), lambda x: (torch.repeat_interleave(x, 3, dim=1) * 2, x.repeat(2, 1, 2),
                                           torch.tile(x[:, 1:3], (2,)) - x[:, :1].tile((1, 4))))


@helion.kernel()
def diagonals(x: torch.Tensor, cube: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    above = torch.empty([m, n - 2], dtype=x.dtype, device=x.device)
    below = torch.empty([m, n - 3], dtype=x.dtype, device=x.device)
    traced = torch.empty([m], dtype=x.dtype, device=x.device)
    square = torch.empty([m, n + 1, n + 1], dtype=x.dtype, device=x.device)
    across = torch.empty([m, cube.size(1)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        outer = v[:, :, None] * v[:, None, :] + v[:, None, :]
        above[tile, :] = torch.diagonal(outer, 2, 1, 2)
        below[tile, :] = outer.diagonal(-3, -2, -1)
        traced[tile] = torch.diagonal(outer, 0, 2, 1).sum(-1) + torch.trace(cube[:, 0, :]) + cube[:, 1, :].trace()
        corner = torch.diag(torch.diag(cube[:, 2, :]), 0)[0, 0]
        square[tile, :, :] = torch.diag(x[0, :], -1)[None, :, :] + v[:, 0, None, None] * torch.diag(x[0, :], 1) * corner
        across[tile, :] = cube[:, :, :].diagonal(0, 0, 2)[None, :, 0] + v[:, 1:2]
    return above, below, traced, square, across


def diagonals_reference(x, cube):
    outer = x[:, :, None] * x[:, None, :] + x[:, None, :]
    traced = outer.diagonal(0, 2, 1).sum(-1) + torch.trace(cube[:, 0, :]) + cube[:, 1, :].trace()
    square = torch.diag(x[0], -1)[None] + x[:, 0, None, None] * torch.diag(x[0], 1) * torch.diag(torch.diag(cube[:, 2, :]))[0, 0]
    return (torch.diagonal(outer, 2, 1, 2), outer.diagonal(-3, -2, -1), traced, square,
            cube.diagonal(0, 0, 2)[None, :, 0] + x[:, 1:2])


@pytest.mark.parametrize("m,n,c", [(1, 4, 1), (23, 11, 5)])
def test_diagonal_diag_and_trace(m, n, c, device):
    check_kernel(diagonals, (randn(m, n, device=device), randn(c, 3, c, device=device)), diagonals_reference)


@helion.kernel()
def tile_diagonals(x: torch.Tensor, batched: torch.Tensor) -> tuple[torch.Tensor, ...]:
    n = x.size(0)
    diagonal = torch.empty([n], dtype=x.dtype, device=x.device)
    per_batch = torch.empty([batched.size(0), n], dtype=x.dtype, device=x.device)
    traces = torch.zeros([1], dtype=torch.float32, device=x.device)
    for tile in hl.tile(n):
        block = x[tile, tile]  # a block on the matrix's diagonal: its diagonal is the matrix's
        diagonal[tile] = torch.diagonal(block) * 2
        per_batch[:, tile] = batched[:, tile, tile].diagonal(0, 2, 1)
        hl.atomic_add(traces, [0], torch.trace(block.float()))
    return diagonal, per_batch, traces


@pytest.mark.parametrize("n", [1, 37, 130])
def test_diagonal_of_a_tile_taken_twice(n, device):
    x, batched = randn(n, n, device=device), randn(3, n, n, device=device)
    check_kernel(tile_diagonals, (x, batched),
                 lambda x, b: (torch.diagonal(x) * 2, b.diagonal(0, 2, 1), x.trace().reshape(1)),
                 rtol=1e-5, atol=1e-4)


@helion.kernel()
def bool_parts(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 4], dtype=torch.bool, device=x.device)
    for tile in hl.tile(x.size(0)):
        positive = x[tile, :] > 0
        out[tile, :] = positive[:, 2:6] & positive[:, -4:]
    return out


def test_parts_of_bool_values(device):
    x = randn(29, 11, device=device)
    check_kernel(bool_parts, (x,), lambda x: (x > 0)[:, 2:6] & (x > 0)[:, -4:])


@helion.kernel()
def slice_of_a_tile(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0) // 2], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile][0:2].sum()
    return out


@helion.kernel()
def run_time_bound(x: torch.Tensor, k: int) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = x[tile, :][:, :k].sum(1, keepdim=True) + x[tile, :]
    return out


@helion.kernel()
def empty_part(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = x[tile, :][:, 5:5].sum(1, keepdim=True) + x[tile, :]
    return out


@helion.kernel()
def narrow_past_the_end(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.narrow(x[tile, :], 1, 8, 4)
    return out


@helion.kernel()
def glu_of_odd(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 5], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.nn.functional.glu(x[tile, :])
    return out


@helion.kernel()
def split_of_wrong_sizes(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 4], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        a, b = torch.split(x[tile, :], [4, 4], 1)
        out[tile, :] = a + b
    return out


@helion.kernel()
def index_out_of_range(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile, :][:, 11]
    return out


@helion.kernel()
def repeat_interleave_flattening(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), 2 * x.size(1)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.repeat_interleave(x[tile, :], 2).reshape(tile.block_size, -1)
    return out


@helion.kernel()
def diagonal_of_one_dim(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.diagonal(x[tile, :, :], 0, 1, -2).sum(-1)
    return out


@helion.kernel()
def diagonal_past_the_corner(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.diagonal(x[tile, :, :], 5, 1, 2).sum(-1)
    return out


@helion.kernel()
def diagonal_of_a_tile_at_an_offset(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.diagonal(x[tile, tile], 1)
    return out


@helion.kernel()
def diagonal_of_two_tiles(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([x.size(0), x.size(1)]):
        out[tile_m] = torch.diagonal(x[tile_m, tile_n])
    return out


@pytest.mark.parametrize("kernel,args,error,message", [
    (slice_of_a_tile, (randn(40),), exc.NotSupported, "along a tile's dim .* whole dims of a constant size"),
    (run_time_bound, (randn(40, 11), 3), exc.NotSupported, "is not a compile-time constant"),
    (empty_part, (randn(40, 11),), exc.ShapeMismatch, "no lanes of a dim of 11"),
    (narrow_past_the_end, (randn(40, 11),), exc.ShapeMismatch, "torch.narrow: 4 lanes from 8 of a dim of 11"),
    (glu_of_odd, (randn(40, 11),), exc.ShapeMismatch, "F.glu halves a dim of 11; it must be even"),
    (split_of_wrong_sizes, (randn(40, 11),), exc.ShapeMismatch, r"torch.split into \[4, 4\] of a dim of 11"),
    (index_out_of_range, (randn(40, 11),), exc.ShapeMismatch, "index 11 out of range for a dim of 11"),
    (repeat_interleave_flattening, (randn(40, 11),), exc.NotSupported, "without a dim of a value of more than one dim"),
    (diagonal_of_one_dim, (randn(40, 4, 5),), exc.ShapeMismatch, "torch.diagonal of dims 1 and -2: they are the same dim"),
    (diagonal_past_the_corner, (randn(40, 4, 5),), exc.ShapeMismatch, "torch.diagonal at offset 5 of a 4x5 matrix has no lanes"),
    (diagonal_of_a_tile_at_an_offset, (randn(40, 40),), exc.NotSupported, "offset 1 of a tile's dim taken twice"),
    (diagonal_of_two_tiles, (randn(40, 40),), exc.NotSupported, "torch.diagonal along a tile's dim"),
])
def test_refused_parts_say_why(kernel, args, error, message):
    with pytest.raises(error, match=message):
        bound = kernel.bind(args)
        bound.to_triton_code(bound.config_spec.default_config())
