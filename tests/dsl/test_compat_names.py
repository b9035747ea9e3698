"""Helion compatibility, continued: programs using the names Helion's examples use beyond the core
(torch.var_mean, activations, masked_fill/expand_as, hl.tile_index and its siblings, hl.barrier,
registered block sizes as tile dims, matrix products with an out_dtype, helion.exc's warning names,
helion.autotuner's fragments). As in test_compat.py, only the import lines differ from Helion's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.autotuner import PowerOfTwoFragment

from ._harness import check_kernel, randn


@helion.kernel(ignore_warnings=[helion.exc.TensorOperationInWrapper])
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        var, mean = torch.var_mean(row, dim=-1, keepdim=True, correction=0)
        normed = (row - mean) * torch.rsqrt(var + eps)
        out[tile_m, :] = (normed * weight[:].to(torch.float32) + bias[:].to(torch.float32)).to(out.dtype)
    return out


@helion.kernel()
def row_stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    var = torch.empty([m], dtype=torch.float32, device=x.device)
    mean = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        var[tile_m] = row.var(dim=1)
        mean[tile_m] = torch.var_mean(row, 1)[1].to(torch.float32)
    return var, mean


@helion.kernel()
def row_sums(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    block_n = hl.register_block_size(n)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m, block_n], dtype=torch.float32)
        for tile_n in hl.tile(n, block_size=block_n):
            acc += x[tile_m, tile_n].to(torch.float32)
        out[tile_m] = acc.sum(-1)
    return out


@helion.kernel()
def activations(x: torch.Tensor, bias: torch.Tensor, threshold: float) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([6, m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        v = x[tile_m, tile_n]
        shifted = v + bias[tile_n].expand_as(v)
        out[0, tile_m, tile_n] = torch.relu(shifted)
        out[1, tile_m, tile_n] = F.gelu(shifted)
        out[2, tile_m, tile_n] = F.gelu(shifted, approximate="tanh")
        out[3, tile_m, tile_n] = F.silu(shifted)
        out[4, tile_m, tile_n] = shifted.masked_fill(v > threshold, 0.0)
        out[5, tile_m, tile_n] = bias[tile_n][None, :].expand(tile_m, -1) + F.relu(v)
    return out


@helion.kernel()
def tile_positions(x: torch.Tensor) -> torch.Tensor:
    (n,) = x.size()
    out = torch.empty([n], dtype=torch.int32, device=x.device)
    for tile in hl.tile(n):
        inside = hl.tile_index(tile) < hl.tile_end(tile)
        local = hl.tile_index(tile) - hl.tile_begin(tile)
        out[tile] = torch.where(inside, hl.tile_id(tile) * hl.tile_block_size(tile) + local, -1)
    return out


@helion.kernel()
def concat_columns(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, n_a = a.size()
    _, n_b = b.size()
    out = torch.empty([m, n_a + n_b], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile([m, n_a + n_b]):
        columns = hl.tile_index(tile_n)
        left = hl.load(a, [tile_m, tile_n], extra_mask=columns[None, :] < n_a)
        right = hl.load(b, [tile_m, columns - n_a], extra_mask=columns[None, :] >= n_a)
        out[tile_m, tile_n] = torch.where(columns[None, :] < n_a, left, right)
    return out


@helion.kernel()
def divide_by_norm(x: torch.Tensor) -> torch.Tensor:
    (n,) = x.size()
    total = torch.zeros([1], dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    for tile in hl.tile(n):
        hl.atomic_add(total, [0], torch.sum(x[tile].to(torch.float32) * x[tile].to(torch.float32)))
    hl.barrier()
    for tile in hl.tile(n):
        out[tile] = (x[tile].to(torch.float32) * torch.rsqrt(total[0])).to(out.dtype)
    return out


@helion.kernel()
def batched_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    b, m, d = q.size()
    _, n, _ = k.size()
    out = torch.empty([b, m, n], dtype=torch.float32, device=q.device)
    for tile_b, tile_m, tile_n in hl.tile([b, m, n]):
        out[tile_b, tile_m, tile_n] = torch.bmm(q[tile_b, tile_m, :], k[tile_b, tile_n, :].transpose(1, 2), torch.float32)
    return out


@helion.kernel()
def reversed_copy(x: torch.Tensor) -> torch.Tensor:
    (n,) = x.size()
    out = torch.empty_like(x)
    block = hl.register_block_size(n)
    for tile in hl.tile(n, block_size=block):
        index = tile.begin + hl.arange(block)
        out[tile] = hl.load(x, [n - 1 - index], extra_mask=index < n)
    return out


@helion.kernel()
def scaled_or_zeros(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)
    if scale == 0.0:
        return torch.zeros_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * scale
    return out


@helion.kernel()
def running_totals(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    sums = torch.empty_like(x)
    products = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        sums[tile_m, :] = torch.cumsum(row, dim=1)
        products[tile_m, :] = row.cumprod(1)
    return sums, products


@helion.kernel()
def weight_gradient(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([n], dtype=torch.float32, device=x.device)
    for tile_n in hl.tile(n):
        acc = weight.new_zeros(tile_n, dtype=torch.float32)
        for tile_m in hl.tile(m):
            acc += torch.sum(grad[tile_m, tile_n].to(torch.float32) * x[tile_m, tile_n].to(torch.float32), dim=0)
        out[tile_n] = acc * weight.new_ones(tile_n).to(torch.float32)
    return out


def add_segments(left_values, left_ids, right_values, right_ids):
    return torch.where(left_ids == right_ids, left_values + right_values, right_values), right_ids


def larger(a, b):
    return torch.maximum(a, b)


@helion.kernel()
def segment_sums(ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_e, tile_f in hl.tile(x.size()):
        values = x[tile_e, tile_f]
        scanned, _ = hl.associative_scan(add_segments, (values, ids[tile_e].unsqueeze(1).expand_as(values)), dim=0)
        out[tile_e, tile_f] = scanned
    return out


def keep_larger(left_value, left_index, right_value, right_index):
    take_left = (left_value > right_value) | ((left_value == right_value) & (left_index < right_index))
    return torch.where(take_left, left_value, right_value), torch.where(take_left, left_index, right_index)


@helion.kernel()
def row_argmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.int32, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        columns = hl.arange(n)[None, :].expand_as(row)
        _, index = hl.reduce(keep_larger, (row, columns), dim=1, other=(float("-inf"), n))
        out[tile_m] = index
    return out


@helion.kernel()
def scans_and_reductions(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m, n = x.size()
    running_max = torch.empty_like(x)
    suffix_sums = torch.empty_like(x)
    row_max = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        running_max[tile_m, :] = hl.associative_scan(larger, row, dim=1)
        suffix_sums[tile_m, :] = hl.cumsum(row, dim=1, reverse=True)
        row_max[tile_m] = hl.reduce(larger, row, dim=1, other=float("-inf"))
    return running_max, suffix_sums, row_max


@helion.kernel()
def masked_rows(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n]):
        values = x[tile_m, tile_n]
        rows, columns = values.size(0), values.size(1)
        mask = (keep[tile_m] > 0).view(rows, 1).expand(rows, columns)
        out[tile_m, tile_n] = torch.where(mask, values, values.reshape(-1, columns) * 0.5)
    return out


def test_only_the_imports_differ_from_helion():
    with open(__file__) as source:
        mentions = [line.strip() for line in source if line.startswith(("import build_tools", "from build_tools"))]
    assert mentions == ["import build_tools.dsl as helion", "import build_tools.dsl.language as hl",
                        "from build_tools.dsl.autotuner import PowerOfTwoFragment"]


def test_helion_names_exist():
    assert PowerOfTwoFragment is helion.PowerOfTwoFragment
    assert issubclass(helion.exc.TensorOperationsInHostCall, helion.exc.TensorOperationInWrapper)
    assert issubclass(helion.exc.TensorOperationInWrapper, Warning)


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1030)])
def test_layer_norm(shape, device):
    x, weight, bias = randn(*shape, device=device), randn(shape[1], device=device), randn(shape[1], device=device)
    check_kernel(layer_norm, (x, weight, bias), lambda x, w, b: F.layer_norm(x, [x.shape[1]], w, b, eps=1e-5))


@pytest.mark.parametrize("shape", [(5, 2), (9, 47)])
def test_variance_and_mean(shape, device):
    x = randn(*shape, device=device) * 3 + 1
    check_kernel(row_stats, (x,), lambda x: (x.var(dim=1), x.mean(dim=1)))


@pytest.mark.parametrize("shape", [(1, 1), (6, 45), (3, 300)])
def test_a_registered_block_size_is_the_dim_of_its_tiles(shape, device):
    x = randn(*shape, device=device)
    check_kernel(row_sums, (x,), lambda x: x.sum(-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activations_and_broadcasts(dtype, device):
    x, bias = randn(5, 37, dtype=dtype, device=device), randn(37, dtype=dtype, device=device)

    def reference(x, bias, threshold):
        shifted = x + bias
        return torch.stack([torch.relu(shifted), F.gelu(shifted), F.gelu(shifted, approximate="tanh"), F.silu(shifted),
                            shifted.masked_fill(x > threshold, 0.0), bias.expand_as(x) + F.relu(x)])

    check_kernel(activations, (x, bias, 0.25), reference)


@pytest.mark.parametrize("n", [1, 37, 300])
def test_tile_functions(n, device):
    x = randn(n, device=device)
    check_kernel(tile_positions, (x,), lambda x: torch.arange(x.shape[0], dtype=torch.int32))


@pytest.mark.parametrize("n_a, n_b", [(1, 1), (13, 30)])
def test_concatenate_by_tile_index(n_a, n_b, device):
    a, b = randn(6, n_a, device=device), randn(6, n_b, device=device)
    check_kernel(concat_columns, (a, b), lambda a, b: torch.cat([a, b], dim=1))


@pytest.mark.parametrize("n", [1, 300])
def test_a_barrier_between_loops(n, device):
    x = randn(n, device=device)
    check_kernel(divide_by_norm, (x,), lambda x: x / x.norm())
    launcher = divide_by_norm.bind((x,)).to_triton_code()
    assert "barrier" not in launcher.split("def divide_by_norm(")[-1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_matrix_products_with_an_out_dtype(dtype, device):
    q, k = randn(2, 19, 16, dtype=dtype, device=device), randn(2, 21, 16, dtype=dtype, device=device)
    check_kernel(batched_scores, (q, k), lambda q, k: q @ k.transpose(1, 2), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("n", [1, 37, 300])
def test_arange_over_a_registered_block(n, device):
    check_kernel(reversed_copy, (randn(n, device=device),), lambda x: x.flip(0))


@pytest.mark.parametrize("first", [0.0, 1.5])
def test_an_early_return_in_host_code_follows_each_call(first, device):
    """Bound at one scale, called at both: the launcher keeps the early return, and the kernel
    after it is compiled whichever branch the binding call took."""
    x = randn(37, device=device)
    scaled_or_zeros.reset()
    bound = scaled_or_zeros.bind((x, first))
    for scale in (first, 1.5 - first):
        torch.testing.assert_close(bound(x, scale), x * scale)
        check_kernel(scaled_or_zeros, (x, scale), lambda x, scale: x * scale, n_random=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (5, 37)])
def test_cumulative_sums_and_products(dtype, shape, device):
    x = (1 + 0.1 * randn(*shape, device=device)).to(dtype)
    check_kernel(running_totals, (x,), lambda x: (x.cumsum(1), x.cumprod(1)))


@pytest.mark.parametrize("shape", [(1, 1), (37, 20)])
def test_a_host_tensors_allocations_in_device_code(shape, device):
    grad, x, weight = randn(*shape, device=device), randn(*shape, device=device), randn(shape[1], device=device)
    check_kernel(weight_gradient, (grad, x, weight), lambda grad, x, weight: (grad * x).sum(0))


@pytest.mark.parametrize("shape", [(1, 1), (37, 5), (300, 3)])
def test_a_segmented_scan_with_a_combine_function(shape, device):
    ids = torch.randint(0, 4, (shape[0],)).sort()[0].to(device)
    x = randn(*shape, device=device)
    bound = segment_sums.bind((ids, x))
    config = bound.config_spec.default_config()
    rows = dict(config)["block_sizes"][0]  # the scan restarts at each tile of rows, as in Helion
    expected = torch.empty_like(x, dtype=torch.float64, device="cpu")
    for i in range(x.shape[0]):
        fresh = i % rows == 0 or ids[i] != ids[i - 1]
        expected[i] = x[i].double().cpu() + (0 if fresh else expected[i - 1])
    got = bound.compile_config(config)(ids, x)
    torch.testing.assert_close(got.double().cpu(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1), (6, 37)])
def test_scans_and_reductions_with_combine_functions(shape, device):
    x = randn(*shape, device=device)
    check_kernel(scans_and_reductions, (x,), lambda x: (x.cummax(1).values, x.flip(1).cumsum(1).flip(1), x.amax(1)))


@pytest.mark.parametrize("shape", [(1, 1), (6, 37), (3, 300)])
def test_a_reduction_of_a_tuple_with_a_combine_function(shape, device):
    x = randn(*shape, device=device)
    check_kernel(row_argmax, (x,), lambda x: x.argmax(1).to(torch.int32))


@pytest.mark.parametrize("shape", [(1, 1), (37, 20)])
def test_sizes_and_views_of_device_values(shape, device):
    x, keep = randn(*shape, device=device), randn(shape[0], device=device)
    check_kernel(masked_rows, (x, keep), lambda x, keep: torch.where(keep[:, None] > 0, x, x * 0.5))


def scaled_first_column(x: torch.Tensor, tile: hl.Tile, scale: float) -> torch.Tensor:
    """A helper taking a tile, annotated with Helion's hl.Tile."""
    return x[tile, 0] * scale


@helion.kernel()
def outer_products(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x[i] * y[j] through hl.subscript (Helion's functional `v[:, None]`), plus 2 * x[i] * y[j]
    through a helper taking an hl.Tile."""
    out = torch.empty([x.size(0), y.size(1)], dtype=x.dtype, device=x.device)
    for tile_i, tile_j in hl.tile([x.size(0), y.size(1)]):
        column = hl.subscript(x[tile_i, 0], [slice(None), None])
        row = hl.subscript(y[0, tile_j], [None, slice(None)])
        doubled = hl.subscript(scaled_first_column(x, tile_i, 2.0), [slice(None), None])
        out[tile_i, tile_j] = column * row + doubled * row
    return out


@pytest.mark.parametrize("m,n", [(1, 1), (9, 40)])
def test_subscript_and_tile_annotations(m, n, device):
    x, y = randn(m, 2, device=device), randn(2, n, device=device)
    check_kernel(outer_products, (x, y), lambda x, y: 3.0 * x[:, :1] * y[:1, :])


@helion.kernel(config=helion.Config(block_sizes=[4]))
def printed_tiles(x: torch.Tensor) -> torch.Tensor:
    """hl.device_print and `print` in device code (Triton's tl.device_print)."""
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        hl.device_print("tile values", x[tile])
        print("doubled", x[tile] * 2)
        out[tile] = x[tile]
    return out


def test_device_print(capfd, device):
    x = torch.arange(1, 7, dtype=torch.float32, device=device)
    printed_tiles(x)
    if device != "cpu":
        torch.cuda.synchronize()
    lines = capfd.readouterr().out.splitlines()
    assert sum("tile values" in line for line in lines) >= 2  # at least one line a program
    assert any("doubled" in line and "12" in line for line in lines)  # 2 * x[5], printed by the second program
