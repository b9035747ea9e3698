"""Corpus: device indexing, loads and stores (`:`, integers, bounded slices, None, gathers, hl.load with
extra_mask, hl.store, hl.atomic_add, `t[...] = v` and `t[...] += v`)."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randint, randn


@helion.kernel()
def scale_rows_full_slice(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        out[tile_m, :] = x[tile_m, :] * weight[None, :]
    return out


@pytest.mark.parametrize("shape", [(1, 1), (10, 33), (3, 128)])
def test_full_slice_and_none(shape, device):
    x, w = randn(*shape, device=device), randn(shape[1], device=device)
    check_kernel(scale_rows_full_slice, (x, w), lambda x, w: x * w[None, :])


@helion.kernel()
def integer_indices(x: torch.Tensor):
    m, n = x.size()
    last = n - 1
    per_row = torch.empty([m], dtype=x.dtype, device=x.device)
    first_row = torch.empty([n], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        per_row[tile_m] = x[tile_m, 0] - 2.0 * x[tile_m, last]
    for tile_n in hl.tile(n):
        first_row[tile_n] = x[0, tile_n] + hl.load(x, [m - 1, tile_n])
    return per_row, first_row


@pytest.mark.parametrize("shape", [(1, 1), (12, 5), (70, 3)])
def test_integer_indices(shape, device):
    check_kernel(integer_indices, (randn(*shape, device=device),),
                 lambda x: (x[:, 0] - 2.0 * x[:, -1], x[0, :] + x[-1, :]))


@helion.kernel()
def concat_columns(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, n1 = a.size()
    n2 = b.size(1)
    out = torch.empty([m, n1 + n2], dtype=a.dtype, device=a.device)
    for tile in hl.tile(m):
        out[tile, :n1] = a[tile, :]
        out[tile, n1:] = b[tile, :] * 2.0
    return out


@pytest.mark.parametrize("m,n1,n2", [(1, 1, 1), (9, 3, 13), (33, 20, 7)])
def test_bounded_slice_stores(m, n1, n2, device):
    a, b = randn(m, n1, device=device), randn(m, n2, device=device)
    check_kernel(concat_columns, (a, b), lambda a, b: torch.cat([a, b * 2.0], dim=1))


@helion.kernel()
def multiply_halves(x: torch.Tensor) -> torch.Tensor:
    m = x.size(0)
    half = hl.specialize(x.size(1)) // 2
    out = torch.empty([m, half], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        out[tile, :] = x[tile, :half] * torch.sigmoid(x[tile, half:])
    return out


@pytest.mark.parametrize("shape", [(1, 2), (7, 10), (20, 48)])
def test_bounded_slice_loads(shape, device):
    x = randn(*shape, device=device)
    half = shape[1] // 2
    check_kernel(multiply_halves, (x,), lambda x: x[:, :half] * torch.sigmoid(x[:, half:]))


@helion.kernel()
def outer_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty([a.size(0), b.size(0)], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] = a[tile_m, None] * b[None, tile_n]
    return out


@pytest.mark.parametrize("m,n", [(1, 1), (9, 20)])
def test_none_indices(m, n, device):
    a, b = randn(m, device=device), randn(n, device=device)
    check_kernel(outer_product, (a, b), lambda a, b: a[:, None] * b[None, :])


@helion.kernel()
def embedding(idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    n = idx.size(0)
    e = weight.size(1)
    out = torch.empty([n, e], dtype=weight.dtype, device=weight.device)
    for tile_b, tile_e in hl.tile([n, e]):
        out[tile_b, tile_e] = weight[idx[tile_b], tile_e]
    return out


@pytest.mark.parametrize("n,vocab,e", [(1, 1, 1), (10, 50, 12), (3, 3, 40)])
def test_gather_embedding(n, vocab, e, device):
    idx, w = randint(0, vocab, n, device=device), randn(vocab, e, device=device)
    check_kernel(embedding, (idx, w), lambda idx, w: w[idx])


@helion.kernel()
def gather_1d(table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    out = torch.empty([idx.size(0)], dtype=table.dtype, device=table.device)
    for tile in hl.tile(idx.size(0)):
        out[tile] = table[idx[tile]] * 0.5
    return out


@pytest.mark.parametrize("n,size", [(1, 1), (100, 7)])
def test_gather_1d(n, size, device):
    table, idx = randn(size, device=device), randint(0, size, n, device=device)
    check_kernel(gather_1d, (table, idx), lambda t, idx: t[idx] * 0.5)


@helion.kernel()
def masked_prefix_load(x: torch.Tensor, limit: int) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        values = hl.load(x, [tile], extra_mask=tile.index < limit)
        out[tile] = values + 1.0
    return out


@pytest.mark.parametrize("n,limit", [(1, 0), (50, 17), (130, 129)])
def test_load_extra_mask(n, limit, device):
    x = randn(n, device=device)

    def reference(x, limit):
        expected = torch.ones_like(x)
        expected[:limit] += x[:limit]
        return expected

    check_kernel(masked_prefix_load, (x, limit), reference)


@helion.kernel()
def store_positive_doubled(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    for tile_m, tile_n in hl.tile(x.size()):
        values = x[tile_m, tile_n]
        hl.store(out, [tile_m, tile_n], values * 2.0, extra_mask=values > 0)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (7, 20)])
def test_store_extra_mask(shape, device):
    x, out = randn(*shape, device=device), randn(*shape, device=device)
    check_kernel(store_positive_doubled, (x, out), lambda x, out: torch.where(x > 0, x * 2.0, out))


@helion.kernel()
def plain_hl_store(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        hl.store(out, [tile], hl.load(x, [tile]) * 3.0)
    return out


@pytest.mark.parametrize("n", [1, 66])
def test_hl_load_store(n, device):
    check_kernel(plain_hl_store, (randn(n, device=device),), lambda x: x * 3.0)


@helion.kernel()
def scatter_add(x: torch.Tensor, idx: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    for tile in hl.tile(x.size(0)):
        hl.atomic_add(out, [idx[tile]], x[tile])
    return out


@pytest.mark.parametrize("n,bins", [(1, 1), (100, 9), (37, 64)])
def test_atomic_add_scatter(n, bins, device):
    x, idx = randn(n, device=device), randint(0, bins, n, device=device)
    out = randn(bins, device=device)
    check_kernel(scatter_add, (x, idx, out),
                 lambda x, idx, out: out.index_add(0, idx, x))


@helion.kernel()
def index_add_rows(x: torch.Tensor, idx: torch.Tensor, rows: int) -> torch.Tensor:
    n, d = x.size()
    out = x.new_zeros([rows, d])
    for tile_n, tile_d in hl.tile([n, d]):
        hl.atomic_add(out, [idx[tile_n], tile_d], x[tile_n, tile_d])
    return out


@pytest.mark.parametrize("n,d,rows", [(1, 1, 1), (20, 6, 5)])
def test_atomic_add_2d_into_new_zeros(n, d, rows, device):
    x, idx = randn(n, d, device=device), randint(0, rows, n, device=device)
    check_kernel(index_add_rows, (x, idx, rows),
                 lambda x, idx, rows: torch.zeros(rows, x.size(1), dtype=x.dtype).index_add(0, idx, x))


@helion.kernel()
def accumulate_in_place(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] += x[tile_m, tile_n] * 2.0
    return out


@pytest.mark.parametrize("shape", [(1, 1), (9, 17)])
def test_augmented_store(shape, device):
    out, x = randn(*shape, device=device), randn(*shape, device=device)
    check_kernel(accumulate_in_place, (out, x), lambda out, x: out + x * 2.0)


@helion.kernel()
def batched_rows(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    b, m, n = x.size()
    out = torch.empty_like(x)
    for batch in hl.grid(b):
        for tile_m in hl.tile(m):
            out[batch, tile_m, :] = x[batch, tile_m, :] * scale[batch]
    return out


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 10, 20)])
def test_grid_index_with_tile_and_slice(shape, device):
    x, scale = randn(*shape, device=device), randn(shape[0], device=device)
    check_kernel(batched_rows, (x, scale), lambda x, s: x * s[:, None, None])


@helion.kernel()
def transpose_copy(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([n, m], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        out[tile_n, tile_m] = x[tile_m, tile_n].T
    return out


@pytest.mark.parametrize("shape", [(1, 1), (1, 20), (9, 20)])
def test_transposed_store(shape, device):
    check_kernel(transpose_copy, (randn(*shape, device=device),), lambda x: x.T.contiguous())


@helion.kernel()
def strided_axpy(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.size(), dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = 3.0 * x[tile_m, tile_n] + y[tile_m, tile_n]
    return out


def _non_contiguous(kind: str, device: str) -> torch.Tensor:
    base = randn(30, 24, device=device)
    return {"transposed": base.T, "sliced": base[::2, 1::3], "expanded": base[:1, :].expand(5, 24)}[kind]


@pytest.mark.parametrize("kind", ["transposed", "sliced", "expanded"])
def test_non_contiguous_inputs(kind, device):
    x = _non_contiguous(kind, device)
    y = randn(*x.shape, device=device)
    assert not x.is_contiguous()
    check_kernel(strided_axpy, (x, y), lambda x, y: 3.0 * x + y)


@helion.kernel()
def scale_in_place(x: torch.Tensor, factor: float) -> None:
    for tile_m, tile_n in hl.tile(x.size()):
        x[tile_m, tile_n] = x[tile_m, tile_n] * factor


@pytest.mark.parametrize("shape", [(1, 1), (7, 30)])
def test_in_place_kernel_returning_none(shape, device):
    x = randn(*shape, device=device)
    check_kernel(scale_in_place, (x, -2.5), lambda x, f: x * f,
                 outputs=lambda result, args: (args[0],) if result is None else (result,))


@helion.kernel()
def column_sums_per_row_block(x: torch.Tensor) -> torch.Tensor:
    """Per block of rows: its column sums, one row of `partial` per block (rms_norm_bwd's dweight)."""
    m_block = hl.register_block_size(x.size(0))
    partial = x.new_empty([helion.cdiv(x.size(0), m_block), x.size(1)], dtype=torch.float32)
    n = hl.specialize(x.size(1))
    for rows in hl.tile(x.size(0), block_size=m_block):
        acc = x.new_zeros(n, dtype=torch.float32)
        for row in hl.tile(rows.begin, rows.end):
            acc += x[row, :].to(torch.float32).sum(0)
        partial[rows.id, :] = acc
    return partial


@pytest.mark.parametrize("shape", [(37, 1), (1, 1), (9, 7)])
def test_a_unit_dim_value_stored_through_a_scalar_pointer(shape, device):
    # n = 1: `partial[rows.id, :]` is one element, and `acc` a block of one
    x = randn(*shape, device=device)

    def reference(x, config):
        block = config["block_sizes"][0]
        return torch.stack([x[i:i + block].sum(0) for i in range(0, x.shape[0], block)])

    check_kernel(column_sums_per_row_block, (x,), reference, reference_takes_config=True)


@helion.kernel()
def plus_a_unit_matrix_sum(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] + w[:, :].sum() * w[:, :].reshape(-1)
    return out


@pytest.mark.parametrize("n", [1, 23])
def test_a_load_of_unit_dims_only_is_a_block(n, device):
    # w of 1x1: the load's address has no block dim, and its value is reduced and reshaped
    check_kernel(plus_a_unit_matrix_sum, (randn(n, device=device), randn(1, 1, device=device)),
                 lambda x, w: x + w.sum() * w.reshape(-1))
