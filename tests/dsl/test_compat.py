"""Helion compatibility: programs written the way Helion's documentation and examples write them; only
the two import lines differ from a Helion program."""
from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch import Tensor

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randn


@helion.kernel()
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = torch.broadcast_tensors(x, y)
    out = torch.empty(x.shape, dtype=torch.promote_types(x.dtype, y.dtype), device=x.device)
    for tile in hl.tile(out.size()):
        out[tile] = x[tile] + y[tile]
    return out


@helion.kernel()
def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    k, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)

    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc

    return out


@helion.kernel()
def matmul_with_epilogue(
    x: Tensor,
    y: Tensor,
    epilogue: Callable[[Tensor, tuple[Tensor, ...]], Tensor] = lambda acc, tile: acc,
) -> Tensor:
    m, k = x.size()
    k2, n = y.size()
    assert k == k2, f"size mismatch {k} != {k2}"
    out = torch.empty([m, n], dtype=torch.promote_types(x.dtype, y.dtype), device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = epilogue(acc, (tile_m, tile_n))
    return out


@helion.kernel(config=helion.Config(block_sizes=[1], num_warps=4))
def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


@helion.kernel()
def softmax_two_pass(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    block_size_m = hl.register_block_size(m)
    block_size_n = hl.register_block_size(n)
    for tile_m in hl.tile(m, block_size=block_size_m):
        mi = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        di = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n, block_size=block_size_n):
            values = x[tile_m, tile_n]
            local_amax = torch.amax(values, dim=1)
            mi_next = torch.maximum(mi, local_amax)
            di = di * torch.exp(mi - mi_next) + torch.exp(values - mi_next[:, None]).sum(dim=1)
            mi = mi_next
        for tile_n in hl.tile(n, block_size=block_size_n):
            values = x[tile_m, tile_n]
            out[tile_m, tile_n] = torch.exp(values - mi[:, None]) / di[:, None]
    return out


@helion.kernel(static_shapes=True)
def embedding(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x_flat = x.reshape(-1)
    _, embedding_dim = weight.size()
    out = torch.empty([x_flat.size(0), embedding_dim], dtype=weight.dtype, device=weight.device)
    for tile_b, tile_e in hl.tile([x_flat.size(0), embedding_dim]):
        out[tile_b, tile_e] = weight[x_flat[tile_b], tile_e]
    return out.view(*x.size(), embedding_dim)


def test_only_the_imports_differ_from_helion():
    with open(__file__) as source:
        mentions = [line.strip() for line in source if "build_tools" in line and "mentions" not in line]
    assert mentions == ["import build_tools.dsl as helion", "import build_tools.dsl.language as hl"]


@pytest.mark.parametrize("shapes", [((1,), (1,)), ((6, 21), (6, 21)), ((5, 20), (20,))])
def test_add(shapes, device):
    x, y = randn(*shapes[0], device=device), randn(*shapes[1], device=device)
    check_kernel(add, (x, y), lambda x, y: x + y)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (64, 48, 40), (33, 17, 70)])
def test_matmul(m, k, n, device):
    x, y = randn(m, k, device=device), randn(k, n, device=device)
    tolerance = {} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(matmul, (x, y), lambda x, y: x @ y, **tolerance)
    torch.testing.assert_close(matmul(x, y).double().cpu(), x.double().cpu() @ y.double().cpu(),
                               **(tolerance or {"rtol": 1e-4, "atol": 1e-4}))


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (33, 17, 70)])
def test_matmul_with_epilogue(m, k, n, device):
    x, y, bias = randn(m, k, device=device), randn(k, n, device=device), randn(n, device=device)
    tolerance = {} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(matmul_with_epilogue, (x, y, lambda acc, tile: torch.relu(acc + bias[tile[1]])),
                 lambda x, y, _: torch.relu(x @ y + bias.double().cpu()), **tolerance)
    check_kernel(matmul_with_epilogue, (x, y), lambda x, y: x @ y, **tolerance)


@pytest.mark.parametrize("shape", [(1, 1), (8, 100), (3, 1030)])
@pytest.mark.parametrize("kernel", [softmax, softmax_two_pass], ids=["softmax", "two_pass"])
def test_softmax(kernel, shape, device):
    x = randn(*shape, device=device)
    check_kernel(kernel, (x,), lambda x: torch.softmax(x, dim=1), atol=1e-6)
    torch.testing.assert_close(kernel(x).double().cpu(), torch.softmax(x.double().cpu(), dim=1),
                               rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("index_shape,vocab,dim", [((1,), 1, 1), ((2, 5), 20, 17)])
def test_embedding(index_shape, vocab, dim, device):
    idx = torch.randint(0, vocab, index_shape).to(device)
    weight = randn(vocab, dim, device=device)
    check_kernel(embedding, (idx, weight), lambda idx, w: w[idx])
