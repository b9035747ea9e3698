"""Corpus: torch.einsum in device code: matrix products (tl.dot, also batched and with the output
transposed), matrix-vector and outer products, three operands, implicit outputs, a transpose, a
full contraction, ellipses (broadcast across operands of different ranks, kept or summed),
diagonals and traces (of whole dims, or of one tile's dim taken twice), against torch.einsum in float64; and
the equations refused."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randn
from .test_matmul import matmul_tolerance


@helion.kernel()
def einsums(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, k = x.size()
    n = w.size(1)
    product = torch.empty([m, n], dtype=torch.float32, device=x.device)
    transposed = torch.empty([n, m], dtype=torch.float32, device=x.device)
    matvec = torch.empty([m], dtype=torch.float32, device=x.device)
    outer = torch.empty([m, k, n], dtype=torch.float32, device=x.device)
    chained = torch.empty([m], dtype=torch.float32, device=x.device)
    total = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile in hl.tile(m):
        a = x[tile, :]
        product[tile, :] = torch.einsum("ik,kj->ij", a, w[:, :])
        transposed[:, tile] = torch.einsum("ik,kj->ji", a, w[:, :])
        matvec[tile] = torch.einsum("ij,j->i", a, w[:, 0])
        outer[tile, :, :] = torch.einsum("ij,k->ijk", a, w[1, :])
        chained[tile] = torch.einsum("ij,jk,k", a, w[:, :], w[2, :])
        total[tile] = torch.einsum("ij,ij->i", a, a) + torch.einsum("ij->ji", a)[0, :] + torch.einsum("j,j->", w[0, :], w[1, :])
    return product, transposed, matvec, outer, chained, total


def einsums_reference(x, w):
    x, w = x.double(), w.double()
    return (x @ w, (x @ w).T, x @ w[:, 0], torch.einsum("ij,k->ijk", x, w[1]), x @ w @ w[2],
            (x * x).sum(1) + x[:, 0] + w[0] @ w[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m", [1, 37])
def test_einsum_equations(m, dtype, device):
    x, w = randn(m, 16, dtype=dtype, device=device), randn(16, 16, dtype=dtype, device=device)
    tolerance = {"rtol": 2e-2, "atol": 2e-1} if dtype == torch.bfloat16 else matmul_tolerance(device)  # tl.dot: tf32 on a GPU
    check_kernel(einsums, (x, w), einsums_reference, **tolerance)


@helion.kernel()
def batched(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    b, m, k = x.size()
    out = torch.empty([b, w.size(2), m], dtype=torch.float32, device=x.device)
    for tile in hl.tile(b):
        out[tile, :, :] = torch.einsum("bik,bkj->bji", x[tile, :, :], w[tile, :, :])
    return out


@pytest.mark.parametrize("b", [1, 5])
def test_batched_einsum_is_a_batched_product(b, device):
    x, w = randn(b, 16, 32, device=device), randn(b, 32, 16, device=device)
    check_kernel(batched, (x, w), lambda x, w: torch.einsum("bik,bkj->bji", x.double(), w.double()), **matmul_tolerance(device))


def test_matrix_products_go_to_tl_dot():
    args = (randn(37, 16), randn(16, 16))
    bound = einsums.bind(args)
    source = bound.to_triton_code(bound.config_spec.default_config())
    assert source.count("tl.dot(") == 2  # product and transposed; the others are summed products


@helion.kernel()
def ellipses_and_diagonals(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    m, n, k = x.size()
    scaled = torch.empty([m, n, k], dtype=torch.float32, device=x.device)
    summed = torch.empty([m, k], dtype=torch.float32, device=x.device)
    implicit = torch.empty([m, n, k], dtype=torch.float32, device=x.device)
    diagonal = torch.empty([m, n], dtype=torch.float32, device=x.device)
    traced = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile in hl.tile(m):
        a = x[tile, :, :]
        scaled[tile, :, :] = torch.einsum("...j,j->...j", a, w[0, :])
        summed[tile, :] = torch.einsum("b...j->bj", a)
        implicit[tile, :, :] = torch.einsum("...,j", a[:, :, 0], w[1, :])
        diagonal[tile, :] = torch.einsum("bii->bi", a[:, :, :n]) + torch.einsum("ii,j->j", w[:, :], w[2, :n])[None, :]
        traced[tile] = torch.einsum("bii", a[:, :, :n]) + torch.einsum("ij,...->...", w[:, :], a[:, 0, 0])
    return scaled, summed, implicit, diagonal, traced


def ellipses_and_diagonals_reference(x, w):
    x, w = x.double(), w.double()
    n = x.size(1)
    return (torch.einsum("...j,j->...j", x, w[0]), torch.einsum("b...j->bj", x), torch.einsum("...,j", x[:, :, 0], w[1]),
            torch.einsum("bii->bi", x[:, :, :n]) + torch.einsum("ii,j->j", w, w[2, :n])[None],
            torch.einsum("bii", x[:, :, :n]) + torch.einsum("ij,...->...", w, x[:, 0, 0]))


@pytest.mark.parametrize("m,n", [(1, 5), (19, 5), (6, 1)])
def test_einsum_ellipses_and_diagonals(m, n, device):
    x, w = randn(m, n, 7, device=device), randn(7, 7, device=device)
    check_kernel(ellipses_and_diagonals, (x, w), ellipses_and_diagonals_reference, rtol=1e-4, atol=1e-3)


@helion.kernel()
def diagonals_of_tile_blocks(x: torch.Tensor, batched: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = x.size(0)
    diagonal = torch.empty([n], dtype=x.dtype, device=x.device)
    per_batch = torch.empty([batched.size(0), n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        diagonal[tile] = torch.einsum("ii->i", x[tile, tile])
        per_batch[:, tile] = torch.einsum("bii->bi", batched[:, tile, tile]) + x[tile, 0][None, :]
    return diagonal, per_batch


@pytest.mark.parametrize("n", [1, 45])
def test_einsum_diagonal_of_a_tile_taken_twice(n, device):
    x, batched = randn(n, n, device=device), randn(2, n, n, device=device)
    check_kernel(diagonals_of_tile_blocks, (x, batched),
                 lambda x, b: (torch.einsum("ii->i", x), torch.einsum("bii->bi", b) + x[:, 0][None, :]))


def _einsum_kernel(equation: str):
    @helion.kernel()
    def kernel(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
        for tile in hl.tile(x.size(0)):
            out[tile] = torch.einsum(equation, x[tile, :], x[tile, :])
        return out
    return kernel


@pytest.mark.parametrize("equation,error,message", [
    ("ii,ij->i", exc.NotSupported, "torch.einsum's diagonal along a tile's dim"),
    ("i.j,ij->i", exc.ShapeMismatch, "'i.j' for a value of shape"),
    ("...ijk,ij->i", exc.ShapeMismatch, "for a value of shape"),
    ("ij->i", exc.ShapeMismatch, "names 1 operands; 2 given"),
    ("ijk,ij->i", exc.ShapeMismatch, "'ijk' for a value of shape"),
    ("ij,ij->q", exc.ShapeMismatch, "output indices 'q'"),
])
def test_refused_equations_say_why(equation, error, message):
    with pytest.raises(error, match=message):
        kernel = _einsum_kernel(equation)
        bound = kernel.bind((randn(8, 16),))
        bound.to_triton_code(bound.config_spec.default_config())


@helion.kernel()
def diagonal_of_a_rectangle(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile, 0] + torch.einsum("ii->", x[:3, :])
    return out


def test_a_diagonal_of_unequal_extents_is_refused():
    with pytest.raises(exc.ShapeMismatch, match=r"index 'i' repeated within 'ii' over extents \[3, 16\]"):
        bound = diagonal_of_a_rectangle.bind((randn(8, 16),))
        bound.to_triton_code(bound.config_spec.default_config())
