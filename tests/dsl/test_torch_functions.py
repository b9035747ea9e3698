"""Corpus: the torch and torch.nn.functional functions of build_tools/dsl/torch_functions.py in
device code, function and method forms, against PyTorch in float64: elementwise ones over a
tile of rows (float32 and bfloat16), NaN and infinity handling, and row reductions."""
import pytest
import torch
import torch.nn.functional as F

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn

ELEMENTWISE = [
    lambda v, w: torch.pow(v, 3) + v.pow(2),
    lambda v, w: torch.square(v) - v.square(),
    lambda v, w: torch.sign(v) + v.sign() * 2,
    lambda v, w: torch.round(v * 4) + (v * 8).round(),
    lambda v, w: torch.fmod(v * 5, w) + (v * 3).fmod(1.5),
    lambda v, w: torch.remainder(v * 5, w) + (v * 3).remainder(-1.5),
    lambda v, w: torch.lerp(v, w, 0.25) + v.lerp(w, 0.75),
    lambda v, w: torch.addcmul(v, v, w, value=0.5) + torch.addcdiv(w, v, w + 4, value=2),
    lambda v, w: torch.clip(v, -0.5, 0.25) + v.clip(min=0.0),
    lambda v, w: F.softplus(v * 8) + F.softplus(v, beta=2, threshold=1),
    lambda v, w: F.leaky_relu(v) + F.leaky_relu(v, 0.2) + F.hardtanh(v * 2) + F.relu6(v * 8),
    lambda v, w: F.hardsigmoid(v * 4) + F.hardswish(v * 4),
    lambda v, w: F.elu(v) + F.elu(v, alpha=0.5) + F.mish(v) + F.logsigmoid(v * 8),
]
FUNCTIONS = len(ELEMENTWISE)
STEPPED = [2, 3, 4, 5]  # sign, round, fmod, remainder: a rounding of their operand can move them a step


@helion.kernel()
def elementwise_functions(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([FUNCTIONS, m, n], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        v, w = x[tile_m, :], y[tile_m, :]
        for k, function in enumerate(ELEMENTWISE):
            out[k, tile_m, :] = function(v, w)
    return out


def elementwise_reference(x, y):
    return torch.stack([function(x, y) for function in ELEMENTWISE])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (7, 45)])
def test_elementwise_functions(shape, dtype, device):
    x = randn(*shape, dtype=dtype, device=device)
    y = (randn(*shape, device=device).abs() + 0.5).to(dtype) * torch.where(randn(*shape) > 0, 1, -1).to(device, dtype)
    if dtype == torch.float32:
        check_kernel(elementwise_functions, (x, y), elementwise_reference)
    else:  # bfloat16 functions against PyTorch's bfloat16 ones, the stepped ones left out
        smooth = [k for k in range(FUNCTIONS) if k not in STEPPED]
        check_kernel(elementwise_functions, (x, y),
                     lambda x, y: elementwise_reference(x.to(dtype), y.to(dtype)).double()[smooth],
                     outputs=lambda out, args: out[smooth], rtol=2e-2, atol=6e-2)


@helion.kernel()
def nan_and_infinity(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([5, m, n], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        v = x[tile_m, :]
        out[0, tile_m, :] = torch.isnan(v).to(torch.float32)
        out[1, tile_m, :] = v.isinf().to(torch.float32) + torch.isfinite(v).to(torch.float32) * 2
        out[2, tile_m, :] = torch.nan_to_num(v)
        out[3, tile_m, :] = v.nan_to_num(nan=1.5, posinf=7.0, neginf=-7.0)
        out[4, tile_m, :] = torch.sign(v).nan_to_num(nan=3.0)
    return out


@pytest.mark.parametrize("shape", [(1, 3), (6, 40)])
def test_nan_and_infinity(shape, device):
    x = randn(*shape)
    x.view(-1)[0::3] = float("nan")
    x.view(-1)[1::5] = float("inf")
    x.view(-1)[2::7] = float("-inf")

    def reference(x):
        x = x.float()
        return torch.stack([torch.isnan(x).float(), x.isinf().float() + torch.isfinite(x).float() * 2,
                            torch.nan_to_num(x), x.nan_to_num(nan=1.5, posinf=7.0, neginf=-7.0),
                            torch.sign(x).nan_to_num(nan=3.0)]).double()

    check_kernel(nan_and_infinity, (x.to(device),), reference)


@helion.kernel()
def row_reductions(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    m, n = x.size()
    lse = torch.empty([m], dtype=x.dtype, device=x.device)
    std = torch.empty([m, 1], dtype=torch.float32, device=x.device)
    flags = torch.empty([m, 2], dtype=torch.int32, device=x.device)
    where = torch.empty([m, 2], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(m):
        v = x[tile_m, :]
        lse[tile_m] = torch.logsumexp(v, dim=-1)
        std[tile_m, :] = v.float().std(dim=-1, keepdim=True, unbiased=n > 1)  # one element: NaN unbiased
        flags[tile_m, 0] = torch.any(v > 1.5, dim=-1).to(torch.int32)
        flags[tile_m, 1] = (v > -2.5).all(dim=1).to(torch.int32)
        where[tile_m, 0] = torch.argmax(v, dim=-1)
        where[tile_m, 1] = v.argmin(dim=1)
    return lse, std, flags, where


@pytest.mark.parametrize("shape", [(1, 1), (9, 70), (2, 1000)])
def test_row_reductions(shape, device):
    x = randn(*shape, device=device)
    check_kernel(row_reductions, (x,), lambda x: (
        torch.logsumexp(x, -1), x.std(-1, keepdim=True, unbiased=x.size(1) > 1),
        torch.stack([(x > 1.5).any(-1), (x > -2.5).all(1)], 1).int(),
        torch.stack([x.argmax(-1), x.argmin(1)], 1)))


@helion.kernel()
def argmax_over_everything(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(x.size(0)):
        out[tile_m] = torch.argmax(x[tile_m, :]) + 0 * tile_m.index
    return out


def test_argmax_without_a_dim_is_refused():
    x = randn(4, 8)
    with pytest.raises(exc.NotSupported, match="torch.argmax over all dims in device code; give a dim"):
        argmax_over_everything.bind((x,)).to_triton_code(argmax_over_everything.bind((x,)).config_spec.default_config())


@helion.kernel()
def row_max_and_index(x: torch.Tensor, with_indices: hl.constexpr) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    values = torch.empty([m], dtype=x.dtype, device=x.device)
    indices = torch.zeros([m], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(m):
        best = torch.max(x[tile_m, :], dim=1)
        values[tile_m] = best.values
        if with_indices:
            indices[tile_m] = best.indices
    return values, indices


@pytest.mark.parametrize("with_indices", [False, True])
def test_max_with_indices_under_a_looped_reduction(with_indices, device):
    """torch.max(x, dim).values reduce in chunks of a looped reduction dim; using .indices makes
    that dim persistent (the dim is whole in the code) instead of failing."""
    x = randn(5, 70, device=device)
    bound = row_max_and_index.bind((x, with_indices))
    config = helion.Config(block_sizes=[4], reduction_loops=[16])
    assert ("roffset_" in bound.to_triton_code(config)) != with_indices
    values, indices = bound.compile_config(config)(x, with_indices)
    torch.testing.assert_close(values.cpu(), x.cpu().max(1).values, rtol=0, atol=0)
    expected = x.cpu().argmax(1) if with_indices else torch.zeros(5, dtype=torch.int64)
    torch.testing.assert_close(indices.cpu(), expected, rtol=0, atol=0)


@helion.kernel()
def row_norms(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m, n = x.size()
    normed = torch.empty([2, m, n], dtype=x.dtype, device=x.device)
    norms = torch.empty([m, 6], dtype=torch.float32, device=x.device)
    products = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        v = x[tile_m, :]
        normed[0, tile_m, :] = F.layer_norm(v, [n], w[:], b[:], eps=1e-5)
        normed[1, tile_m, :] = F.rms_norm(v, [n], w[:])
        norms[tile_m, 0] = torch.linalg.vector_norm(v, dim=1).float()
        norms[tile_m, 1] = torch.linalg.vector_norm(v, 1, dim=-1).float()
        norms[tile_m, 2] = torch.linalg.vector_norm(v, float("inf"), dim=1).float()
        norms[tile_m, 3] = torch.linalg.vector_norm(v, 0, dim=1).float()
        norms[tile_m, 4] = torch.linalg.vector_norm(v, 3, dim=1, dtype=torch.float32)
        norms[tile_m, 5] = v.norm(dim=1).float() - torch.norm(v, p=1, dim=1).float()
        products[tile_m] = torch.prod(f[tile_m, :], dim=1)
    return normed, norms, products


def row_norms_reference(x, w, b, f, dtype):
    n = x.size(1)
    low = x.to(dtype)
    return (torch.stack([F.layer_norm(x, [n], w, b, eps=1e-5), F.rms_norm(low, [n], w.to(dtype)).double()]),
            torch.stack([torch.linalg.vector_norm(x, dim=1), torch.linalg.vector_norm(x, 1, dim=-1),
                         torch.linalg.vector_norm(x, float("inf"), dim=1), torch.linalg.vector_norm(x, 0, dim=1),
                         torch.linalg.vector_norm(x, 3, dim=1), x.norm(dim=1) - torch.norm(x, p=1, dim=1)], 1),
            torch.prod(f, dim=1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (6, 70)])
def test_row_norms(shape, dtype, device):
    x = randn(*shape, dtype=dtype, device=device)
    x.view(-1)[-1] = 0.0  # a zero for the 0-"norm" to skip
    w, b = randn(shape[1], dtype=dtype, device=device), randn(shape[1], dtype=dtype, device=device)
    factors = (randn(*shape, device=device) * 0.125 + 1).to(dtype)  # products of 70 stay near 1
    tolerance = {} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 5e-2}
    check_kernel(row_norms, (x, w, b, factors), lambda x, w, b, f: row_norms_reference(x, w, b, f, dtype), **tolerance)


@helion.kernel()
def integer_products(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.int64, device=x.device)
    for tile_m in hl.tile(m):
        out[tile_m] = x[tile_m, :].prod(dim=-1)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 45)])
def test_integer_products_are_int64(shape, device):
    x = (randint(1, 3, *shape, device=device) * torch.where(randint(0, 2, *shape) > 0, 1, -1).to(device)).to(torch.int32)
    check_kernel(integer_products, (x,), lambda x: x.prod(dim=-1))


@helion.kernel()
def angles(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    (n,) = y.size()
    out = torch.empty([2, n], dtype=y.dtype, device=y.device)
    for tile in hl.tile(n):
        out[0, tile] = torch.atan2(y[tile], x[tile])
        out[1, tile] = x[tile].arctan2(y[tile])
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_atan2_over_every_octant_and_special_values(dtype, device):
    special = [(0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (-0.0, 1.0), (1.0, 0.0), (-1.0, -0.0), (float("inf"), float("inf")),
               (float("-inf"), 2.0), (3.0, float("-inf")), (float("nan"), 1.0), (1.0, float("nan")), (1e-30, 1e30),
               (1e30, -1e-30), (2.5, 2.5), (-2.5, 2.5)]
    angle = torch.rand(300) * 2 * torch.pi
    radius = torch.exp(randn(300, device="cpu") * 3)
    y = torch.cat([torch.tensor([a for a, _ in special]), radius * torch.sin(angle)]).to(device, dtype)
    x = torch.cat([torch.tensor([b for _, b in special]), radius * torch.cos(angle)]).to(device, dtype)
    tolerance = {"rtol": 1e-6, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 8e-3, "atol": 1e-5}
    nan_marked = lambda out: out.nan_to_num(nan=7.0)  # noqa: E731  (NaN where PyTorch's is NaN)
    check_kernel(angles, (y, x), lambda y, x: nan_marked(torch.stack([torch.atan2(y, x), torch.atan2(x, y)])),
                 outputs=lambda out, args: nan_marked(out), **tolerance)
