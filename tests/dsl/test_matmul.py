"""Corpus: matrix products (torch.addmm/mm/matmul/@/bmm/baddbmm, hl.dot with acc/out_dtype), split-k with
atomics, epilogues, transposed operands (.T/.transpose/.permute), and torch.matmul's broadcasting:
operands of different ranks, unit batch dims, one-dim operands (vectors)."""
import re

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randn
from build_tools.dsl import exc

SHAPES = [(1, 1, 1), (37, 19, 45), (16, 80, 33)]


def matmul_tolerance(device: str, dtype: torch.dtype = torch.float32) -> dict:
    """fp32 dots may use TF32 on a GPU; half inputs round their products' inputs."""
    if dtype != torch.float32 or device != "cpu":
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 1e-4, "atol": 1e-4}


@helion.kernel()
def matmul_addmm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    k2, n = y.size()
    assert k == k2, f"size mismatch {k} != {k2}"
    out = torch.empty([m, n], dtype=torch.promote_types(x.dtype, y.dtype), device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc.to(out.dtype)
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_matmul_addmm(m, k, n, dtype, device):
    x, y = randn(m, k, dtype=dtype, device=device), randn(k, n, dtype=dtype, device=device)
    check_kernel(matmul_addmm, (x, y), lambda x, y: x @ y, **matmul_tolerance(device, dtype))


@helion.kernel()
def matmul_operator(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc += x[tile_m, tile_k] @ y[tile_k, tile_n]
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_matmul_operator(m, k, n, device):
    x, y = randn(m, k, device=device), randn(k, n, device=device)
    check_kernel(matmul_operator, (x, y), lambda x, y: x @ y, **matmul_tolerance(device))


@helion.kernel()
def matmul_mm_and_matmul(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = y.size(1)
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = acc + torch.mm(x[tile_m, tile_k], y[tile_k, tile_n])
            acc = acc + torch.matmul(x[tile_m, tile_k], z[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("m,k,n", SHAPES[1:])
def test_mm_and_matmul(m, k, n, device):
    x, y, z = randn(m, k, device=device), randn(k, n, device=device), randn(k, n, device=device)
    check_kernel(matmul_mm_and_matmul, (x, y, z), lambda x, y, z: x @ y + x @ z,
                 **matmul_tolerance(device))


@helion.kernel()
def matmul_split_k(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.zeros([m, n], dtype=torch.float32, device=x.device)
    split_k = hl.register_block_size(k)
    for tile_m, tile_n, outer_k in hl.tile([m, n, k], block_size=[None, None, split_k]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for inner_k in hl.tile(outer_k.begin, outer_k.end):
            acc = torch.addmm(acc, x[tile_m, inner_k], y[inner_k, tile_n])
        hl.atomic_add(out, [tile_m, tile_n], acc)
    return out


@pytest.mark.parametrize("m,k,n", SHAPES + [(8, 150, 8)])
def test_split_k_atomic(m, k, n, device):
    x, y = randn(m, k, device=device), randn(k, n, device=device)
    check_kernel(matmul_split_k, (x, y), lambda x, y: x @ y, **matmul_tolerance(device))


@helion.kernel()
def matmul_hl_dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = y.size(1)
    out = torch.empty([m, n], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = hl.dot(x[tile_m, tile_k], y[tile_k, tile_n], acc=acc)
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_hl_dot_with_acc(m, k, n, dtype, device):
    x, y = randn(m, k, dtype=dtype, device=device), randn(k, n, dtype=dtype, device=device)
    check_kernel(matmul_hl_dot, (x, y), lambda x, y: x @ y, **matmul_tolerance(device, dtype))


@helion.kernel()
def matmul_hl_dot_out_dtype(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = y.size(1)
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = acc + hl.dot(x[tile_m, tile_k], y[tile_k, tile_n], out_dtype=torch.float32)
        out[tile_m, tile_n] = acc.to(x.dtype)
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_hl_dot_out_dtype(m, k, n, device):
    x = randn(m, k, dtype=torch.float16, device=device)
    y = randn(k, n, dtype=torch.float16, device=device)
    check_kernel(matmul_hl_dot_out_dtype, (x, y), lambda x, y: x @ y,
                 **matmul_tolerance(device, torch.float16))


@helion.kernel()
def batched_baddbmm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    b, m, k = x.size()
    _, _, n = y.size()
    out = torch.empty([b, m, n], dtype=x.dtype, device=x.device)
    for tile_b, tile_m, tile_n in hl.tile([b, m, n]):
        acc = hl.zeros([tile_b, tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.baddbmm(acc, x[tile_b, tile_m, tile_k], y[tile_b, tile_k, tile_n])
        out[tile_b, tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("b,m,k,n", [(1, 1, 1, 1), (3, 20, 17, 9)])
def test_baddbmm(b, m, k, n, device):
    x, y = randn(b, m, k, device=device), randn(b, k, n, device=device)
    check_kernel(batched_baddbmm, (x, y), lambda x, y: torch.bmm(x, y), **matmul_tolerance(device))


@helion.kernel()
def batched_bmm_grid(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    b, m, k = x.size()
    n = y.size(2)
    out = torch.empty([b, m, n], dtype=x.dtype, device=x.device)
    for batch in hl.grid(b):
        for tile_m, tile_n in hl.tile([m, n]):
            acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
            for tile_k in hl.tile(k):
                product = torch.bmm(x[batch, tile_m, tile_k].unsqueeze(0),
                                    y[batch, tile_k, tile_n].unsqueeze(0))
                acc = acc + product.squeeze(0)
            out[batch, tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("b,m,k,n", [(1, 1, 1, 1), (2, 33, 20, 18)])
def test_bmm_in_grid(b, m, k, n, device):
    x, y = randn(b, m, k, device=device), randn(b, k, n, device=device)
    check_kernel(batched_bmm_grid, (x, y), lambda x, y: torch.bmm(x, y), **matmul_tolerance(device))


@helion.kernel()
def linear_relu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = weight.size(0)
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], weight[tile_n, tile_k].T)
        acc = acc + bias[tile_n][None, :].to(torch.float32)
        out[tile_m, tile_n] = torch.clamp(acc, min=0.0).to(out.dtype)
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_linear_epilogue(m, k, n, dtype, device):
    x, w = randn(m, k, dtype=dtype, device=device), randn(n, k, dtype=dtype, device=device)
    bias = randn(n, dtype=dtype, device=device)
    check_kernel(linear_relu, (x, w, bias), lambda x, w, b: torch.clamp(x @ w.T + b, min=0.0),
                 **matmul_tolerance(device, dtype))


def test_transposed_load_operand_needs_no_mask_select():
    """A transposed load is zero-filled where masked like the load itself, so the dot takes it as is
    (a tl.where on an operand forces it through registers instead of shared memory into the MMA)."""
    x, w, bias = randn(37, 45), randn(19, 45), randn(19)
    code = linear_relu.bind((x, w, bias)).to_triton_code()
    assert "tl.dot(" in code and "tl.where(" not in code


@helion.kernel()
def row_sums_by_product(x: torch.Tensor, fill: hl.constexpr) -> torch.Tensor:
    """exp(x) summed along its rows as a product with a tile of `fill`, 8 columns wide (each holds
    the rows' sums times `fill`)."""
    m, k = x.size()
    out = torch.empty([m, 8], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m, 8], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = hl.dot(torch.exp(x[tile_m, tile_k]), hl.full([tile_k, 8], fill, dtype=x.dtype), acc=acc)
        out[tile_m, :] = acc
    return out


@pytest.mark.parametrize("m,k", [(1, 1), (37, 45), (16, 80)])
def test_product_with_a_constant_tile(m, k, device):
    """Past a ragged k the computed operand (exp of zero-filled loads: ones, not zeros) is masked and
    the finite constant is not: their product is zero there either way. A constant that is not
    finite keeps its mask, as does an operand computed from loads. Triton 3.6's automatic warp
    specialization crashes on a loop whose dot reads a constant, so that knob is not offered there."""
    x = randn(m, k, device=device)
    check_kernel(row_sums_by_product, (x, 0.5), lambda x, fill: (torch.exp(x).sum(1, keepdim=True) * fill).expand(m, 8),
                 **matmul_tolerance(device))
    ragged = randn(37, 45)
    masked = {fill: re.search(r"tl\.dot\((.*)\)", row_sums_by_product.bind((ragged, fill)).to_triton_code(
        {"block_sizes": [16, 16]})).group(1) for fill in (0.5, float("inf"))}
    assert masked[0.5].startswith("tl.where(") and ", tl.where(" not in masked[0.5]
    assert masked[float("inf")].count("tl.where(") == 2
    knobs = row_sums_by_product.bind((ragged, 0.5)).config_spec.knobs()
    assert [k.choices for k in knobs if k.name == "range_warp_specializes"] == [(None,)]


@helion.kernel()
def matmul_transposed_operands(xt: torch.Tensor, yt: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    k, m = xt.size()
    n = yt.size(0)
    out = torch.empty([m, n], dtype=xt.dtype, device=xt.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            lhs = xt[tile_k, tile_m].transpose(0, 1)
            acc = acc + lhs @ yt[tile_n, tile_k].permute(1, 0)
        acc = acc + z[tile_n, tile_m].T
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_transposed_operands(m, k, n, device):
    xt, yt, z = randn(k, m, device=device), randn(n, k, device=device), randn(n, m, device=device)
    check_kernel(matmul_transposed_operands, (xt, yt, z), lambda xt, yt, z: xt.T @ yt.T + z.T,
                 **matmul_tolerance(device))


@pytest.mark.parametrize("m,k,n", SHAPES[1:])
def test_matmul_non_contiguous_operands(m, k, n, device):
    x = randn(k, m, device=device).T
    y = randn(n, k, device=device).T
    check_kernel(matmul_addmm, (x, y), lambda x, y: x @ y, **matmul_tolerance(device))


@helion.kernel()
def batched_matmul_operator(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    b, m, k = x.size()
    n = y.size(2)
    out = torch.empty([b, m, n], dtype=x.dtype, device=x.device)
    for tile_b, tile_m, tile_n in hl.tile([b, m, n]):
        acc = hl.zeros([tile_b, tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = acc + torch.matmul(x[tile_b, tile_m, tile_k], y[tile_b, tile_k, tile_n])
            acc += x[tile_b, tile_m, tile_k] @ y[tile_b, tile_k, tile_n]
        out[tile_b, tile_m, tile_n] = acc * 0.5
    return out


@pytest.mark.parametrize("b,m,k,n", [(1, 1, 1, 1), (2, 19, 33, 17)])
def test_batched_matmul_operators(b, m, k, n, device):
    x, y = randn(b, m, k, device=device), randn(b, k, n, device=device)
    check_kernel(batched_matmul_operator, (x, y), lambda x, y: torch.bmm(x, y), **matmul_tolerance(device))


@helion.kernel()
def broadcast_products(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
    b, m, k = x.size()
    n = w.size(1)
    ranks = torch.empty([b, m, n], dtype=torch.float32, device=x.device)
    batch = torch.empty([b, m, n], dtype=torch.float32, device=x.device)
    matrix_vector = torch.empty([b, m], dtype=torch.float32, device=x.device)
    vector_matrix = torch.empty([b, n], dtype=torch.float32, device=x.device)
    dots = torch.empty([b], dtype=torch.float32, device=x.device)
    # two batch entries a program: a block of 8 holds 311 KB of float32 operands in shared memory,
    # more than an H100 has (OutOfResources on the GPU; the interpreter has no such limit)
    for tile_b in hl.tile(b, block_size=2):
        a = x[tile_b, :, :]
        ranks[tile_b, :, :] = torch.matmul(a, w[:, :]).float()
        batch[tile_b, :, :] = (a @ w[None, :, :]).float()
        matrix_vector[tile_b, :] = (a @ v[:]).float()
        vector_matrix[tile_b, :] = torch.matmul(v[:], w[:, :])[None, :].float() + a[:, 0, :n].float()
        dots[tile_b] = torch.matmul(v[:], v[:]) + a[:, 0, 0].float()
    return ranks, batch, matrix_vector, vector_matrix, dots


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("b,m,k,n", [(1, 16, 16, 16), (5, 19, 33, 17)])
def test_matmul_broadcasts_as_torch_matmul(b, m, k, n, dtype, device):
    x, w, v = randn(b, m, k, dtype=dtype, device=device), randn(k, n, dtype=dtype, device=device), randn(k, dtype=dtype, device=device)

    def reference(x, w, v):  # n <= k: the vector-matrix row adds x's first n columns
        return (x @ w, x @ w, x @ v, (v @ w)[None] + x[:, 0, :n], v @ v + x[:, 0, 0])

    check_kernel(broadcast_products, (x, w, v), reference, **matmul_tolerance(device, dtype))


@helion.kernel()
def mm_of_three_dims(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0), x.size(1), w.size(1)], dtype=x.dtype, device=x.device)
    for tile_b in hl.tile(x.size(0)):
        out[tile_b, :, :] = torch.mm(x[tile_b, :, :], w[:, :])
    return out


def test_mm_takes_two_dims():
    with pytest.raises(exc.ShapeMismatch, match=r"torch.mm of a value of shape .*; it takes 2 dims"):
        bound = mm_of_three_dims.bind((randn(4, 16, 16), randn(16, 16)))
        bound.to_triton_code(bound.config_spec.default_config())
