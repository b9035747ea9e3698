"""Corpus: the elementwise functions of build_tools/dsl/elementary.py against PyTorch in float64:
exponentials, logarithms, trigonometric and hyperbolic functions and their inverses (accurate to
float32's relative precision near 0, where 1 + x rounds), at infinities, NaN and signed zeros;
two-operand functions, comparisons and logical / bitwise forms, tril / triu, and the core's math
functions as methods."""
import math

import pytest
import torch
import torch.nn.functional as F

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randint, randn, without_nan

@helion.kernel()
def unary_functions(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([31, m, n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        out[0, tile, :] = torch.log1p(v)
        out[1, tile, :] = torch.expm1(v)
        out[2, tile, :] = torch.log10(v.abs())
        out[3, tile, :] = torch.tan(v)
        out[4, tile, :] = torch.sinh(v)
        out[5, tile, :] = torch.cosh(v)
        out[6, tile, :] = torch.asinh(v)
        out[7, tile, :] = torch.acosh(v.float().abs() + 1)
        out[8, tile, :] = torch.atanh(v / 8)
        out[9, tile, :] = torch.atan(v)
        out[10, tile, :] = torch.asin(v / 8)
        out[11, tile, :] = torch.acos(v / 8)
        out[12, tile, :] = torch.frac(v)
        out[13, tile, :] = torch.rad2deg(v) + torch.deg2rad(v)
        out[14, tile, :] = torch.logit(v.abs() / (v.abs() + 1), eps=1e-6)
        out[15, tile, :] = torch.sgn(v)
        out[16, tile, :] = F.selu(v)
        out[17, tile, :] = F.celu(v, 0.5)
        out[18, tile, :] = F.softsign(v)
        out[19, tile, :] = F.tanhshrink(v)
        out[20, tile, :] = F.threshold(v, 0.25, -3.0)
        out[21, tile, :] = v.cos()
        out[22, tile, :] = v.sin()
        out[23, tile, :] = v.erf()
        out[24, tile, :] = v.ceil()
        out[25, tile, :] = (v.float().abs() + 1).log2()
        out[26, tile, :] = v.arcsinh()
        out[27, tile, :] = v.arctan()
        out[28, tile, :] = v.signbit().to(x.dtype)
        out[29, tile, :] = v.clamp_min(-0.5) + v.clamp_max(0.5)
        out[30, tile, :] = v.expm1() + v.log1p()
    return out


def unary_reference(dtype):
    """The reference of unary_functions for inputs of `dtype`: the arguments the kernel computes
    (|v| + 1 in float32, |v| / (|v| + 1) in `dtype`) rounded as the kernel's are."""
    def reference(v):
        def rounded(t):
            return t.float().double()

        return without_nan(torch.stack([
            torch.log1p(v), torch.expm1(v), torch.log10(v.abs()), torch.tan(v), torch.sinh(v), torch.cosh(v),
            torch.asinh(v), torch.acosh(rounded(v.abs() + 1)), torch.atanh(v / 8), torch.atan(v), torch.asin(v / 8),
            torch.acos(v / 8), torch.frac(v), torch.rad2deg(v) + torch.deg2rad(v), torch.logit(rounded(rounded(v.abs()) / rounded(v.abs() + 1)), eps=1e-6),
            torch.sgn(v), F.selu(v), F.celu(v, 0.5), F.softsign(v), F.tanhshrink(v), F.threshold(v, 0.25, -3.0),
            v.cos(), v.sin(), v.erf(), v.ceil(), rounded(v.abs() + 1).log2(), v.arcsinh(), v.arctan(),
            v.signbit().to(v.dtype), v.clamp_min(-0.5) + v.clamp_max(0.5), v.expm1() + v.log1p()]))

    return reference


def special_rows(shape, dtype, device, scale):
    x = randn(*shape, device=device) * scale
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e-30, -3e-8, 88.0, -89.0])
    flat = x.view(-1)
    flat[: min(flat.numel(), specials.numel())] = specials[: flat.numel()].to(device)
    return x.to(dtype)


@pytest.mark.parametrize("dtype,scale", [(torch.float32, 3.0), (torch.float32, 1e-5), (torch.bfloat16, 3.0)])
@pytest.mark.parametrize("shape", [(1, 1), (4, 37)])
def test_unary_functions(shape, dtype, scale, device):
    x = special_rows(shape, dtype, device, scale)
    # float32 math against float64: relative accuracy, and absolute near 0 where a result crosses it
    tolerance = {"rtol": 2e-5, "atol": 1e-6 * scale} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(unary_functions, (x,), unary_reference(dtype), outputs=lambda r, a: without_nan(r), **tolerance)


@helion.kernel()
def near_zero(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([8, m, n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        v = x[tile, :]
        out[0, tile, :] = torch.log1p(v)
        out[1, tile, :] = torch.expm1(v)
        out[2, tile, :] = torch.sinh(v)
        out[3, tile, :] = torch.asinh(v)
        out[4, tile, :] = torch.atanh(v)
        out[5, tile, :] = torch.tan(v)
        out[6, tile, :] = torch.atan(v)
        out[7, tile, :] = torch.asin(v)
    return out


def test_accuracy_near_zero(device):
    """Relative error near 0, where log(1 + x) and exp(x) - 1 lose every digit."""
    x = (torch.rand(3, 50) * 2 - 1) * torch.logspace(-12, -3, 50)
    check_kernel(near_zero, (x.to(device),), lambda v: torch.stack([
        torch.log1p(v), torch.expm1(v), torch.sinh(v), torch.asinh(v), torch.atanh(v), torch.tan(v), torch.atan(v),
        torch.asin(v)]), rtol=1e-5, atol=0, n_random=1)


@helion.kernel()
def binary_functions(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    out = torch.empty([10, m, n], dtype=x.dtype, device=x.device)
    flags = torch.empty([13, m, n], dtype=torch.int32, device=x.device)
    for tile in hl.tile(m):
        a, b = x[tile, :], y[tile, :]
        out[0, tile, :] = torch.hypot(a, b)
        out[1, tile, :] = torch.copysign(a, b)
        out[2, tile, :] = torch.fmax(a, b)
        out[3, tile, :] = a.fmin(b)
        out[4, tile, :] = torch.xlogy(a, b.abs())
        out[5, tile, :] = torch.heaviside(a, b)
        out[6, tile, :] = torch.clamp_min(a, b) + torch.clamp_max(a, 0.5)
        out[7, tile, :] = torch.rsub(a, b, alpha=2)
        out[8, tile, :] = F.normalize(a, dim=1)
        out[9, tile, :] = torch.tril(a[:, None, :] * b[:, :, None], diagonal=-1).sum(1) + a.triu(0) * 0
        flags[0, tile, :] = torch.eq(a, b).int() + 2 * torch.ne(a, b).int()
        flags[1, tile, :] = torch.lt(a, b).int() + 2 * a.le(b).int() + 4 * torch.greater(a, b).int()
        flags[2, tile, :] = a.ge(b).int() + 2 * torch.less_equal(a, 0).int() + 4 * torch.not_equal(b, 0).int()
        flags[3, tile, :] = torch.logical_and(a > 0, b).int() + 2 * torch.logical_or(a, b < 0).int()
        flags[4, tile, :] = torch.logical_xor(a > 0, b > 0).int() + 2 * torch.logical_not(a).int()
        flags[5, tile, :] = torch.signbit(a).int()
        flags[6, tile, :] = torch.count_nonzero(a > 0, dim=1)[:, None] + 0 * a.int()
        low_high = torch.aminmax(a, dim=1, keepdim=True)  # NaN in a row: both NaN, no lane equal to them
        flags[7, tile, :] = (a == low_high.min).int() + 2 * (a == a.aminmax(dim=1, keepdim=True).max).int()
        ia, ib = (torch.nan_to_num(a, nan=0.5, posinf=9.0, neginf=-9.0) * 8).int(), (b.nan_to_num(1.5, 9.0, -9.0) * 8).int()
        flags[8, tile, :] = torch.bitwise_and(ia, ib)
        flags[9, tile, :] = torch.bitwise_or(ia, ib)
        flags[10, tile, :] = ia.bitwise_xor(ib)
        flags[11, tile, :] = torch.bitwise_not(ia)
        flags[12, tile, :] = torch.isfinite(torch.hypot(a, b)).int()
    return out, flags


def binary_reference(x, y):
    a, b = x, y
    out = torch.stack([torch.hypot(a, b), torch.copysign(a, b), torch.fmax(a, b), torch.fmin(a, b),
                       torch.xlogy(a, b.abs()), torch.heaviside(a, b), torch.clamp_min(a, b) + torch.clamp_max(a, 0.5),
                       b - 2 * a, F.normalize(a, dim=1), torch.tril(a[:, None, :] * b[:, :, None], diagonal=-1).sum(1)])
    # float to int of NaN or infinity is undefined (the GPU's differs from the CPU's): finite stand-ins
    ia, ib = (a.nan_to_num(0.5, 9.0, -9.0) * 8).int(), (b.nan_to_num(1.5, 9.0, -9.0) * 8).int()
    flags = torch.stack([
        (a == b).int() + 2 * (a != b).int(), (a < b).int() + 2 * (a <= b).int() + 4 * (a > b).int(),
        (a >= b).int() + 2 * (a <= 0).int() + 4 * (b != 0).int(), ((a > 0) & (b != 0)).int() + 2 * ((a != 0) | (b < 0)).int(),
        ((a > 0) ^ (b > 0)).int() + 2 * (a == 0).int(), torch.signbit(a).int(),
        (a > 0).sum(1, keepdim=True).int().expand_as(a),
        (a == a.amin(1, keepdim=True)).int() + 2 * (a == a.amax(1, keepdim=True)).int(),
        ia & ib, ia | ib, ia ^ ib, ~ia, torch.isfinite(torch.hypot(a, b)).int()])
    return without_nan(out)[0], flags


@pytest.mark.parametrize("shape", [(1, 1), (3, 29)])
def test_binary_and_logical_functions(shape, device):
    x = randn(*shape, device=device) * 2
    y = randn(*shape, device=device) * 2
    if x.numel() > 8:
        x.view(-1)[:8] = torch.tensor([float("nan"), float("inf"), 0.0, -0.0, 0.0, 3.0, float("-inf"), 1.0])
        y.view(-1)[:8] = torch.tensor([1.0, float("nan"), 2.0, -1.0, 0.0, 3.0, 0.5, float("inf")])
    check_kernel(binary_functions, (x, y), binary_reference, outputs=lambda r, a: (without_nan(r[0])[0], r[1]),
                 rtol=2e-5, atol=1e-5)


@helion.kernel()
def inverse_error_function(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x, dtype=torch.float32 if not x.dtype.is_floating_point else x.dtype)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.erfinv(x[tile]) if x.dtype != torch.bfloat16 else x[tile].erfinv()
    return out


def erfinv_inputs(dtype):
    """Uniform over (-1, 1), then the edges: float32's last values below 1, +-1, past them, NaN,
    signed zeros, tiny values."""
    x = torch.rand(3001, dtype=torch.float64) * 2 - 1
    edges = torch.tensor([1 - 2**-24, -(1 - 2**-23), 1 - 1e-6, 0.999, -0.9966, 0.9967, 1.0, -1.0, 1.5, -2.0,
                          float("nan"), 0.0, -0.0, 1e-30, -3e-8, 0.5], dtype=torch.float64)
    x[: len(edges)] = edges
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_erfinv(dtype, device):
    """Within 3 float32 ulp of PyTorch's float64 erfinv of the same input (a relative 4e-7); half
    precision within 2 of its ulp (the float32 result rounded)."""
    x = erfinv_inputs(dtype).to(device)
    tolerance = {torch.float32: (4e-7, 1e-37), torch.bfloat16: (2**-7, 1e-37), torch.float16: (2**-10, 6e-8)}[dtype]
    check_kernel(inverse_error_function, (x,), lambda x: without_nan(torch.special.erfinv(x))[0],
                 outputs=lambda r, a: without_nan(r)[0], rtol=tolerance[0], atol=tolerance[1])


def test_erfinv_of_integers(device):
    x = torch.tensor([-1, 0, 1, 2], dtype=torch.int32, device=device)
    check_kernel(inverse_error_function, (x,), lambda x: without_nan(torch.special.erfinv(x.double()))[0],
                 outputs=lambda r, a: without_nan(r)[0], n_random=0)


def test_erfinv_of_doubles(device):
    """float64 to its conditioning: within 4 ulp of PyTorch's erfinv plus, near +-1, erf's rounding
    over its slope there (both refine by Newton steps on erf, which is flat near +-1); inputs past
    float32's range (1 - 1e-16), subnormal and tiny."""
    x = erfinv_inputs(torch.float64)
    tail = 1 - torch.logspace(-1, -16, 61, dtype=torch.float64)
    x = torch.cat([x, tail, -tail, torch.tensor([1 - 2**-53, -(1 - 2**-53), 5e-324, -1e-300, 2e-200], dtype=torch.float64)])
    expected = without_nan(torch.special.erfinv(x))[0]
    slope = 2 / math.sqrt(math.pi) * torch.exp(-expected.square())
    eps = torch.finfo(torch.float64).eps
    bound = 4 * eps * expected.abs() + 2 * eps / slope

    def within_bound(result, args):  # the expected value where the result is within the bound
        result = without_nan(result.cpu())[0]
        return torch.where((result - expected).abs() <= bound, expected, result)

    check_kernel(inverse_error_function, (x.to(device),), lambda x: expected, outputs=within_bound, rtol=0, atol=0)


@helion.kernel()
def bitwise_of_floats(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.bitwise_not(x[tile])
    return out


def test_bitwise_not_of_floats_is_refused():
    with pytest.raises(exc.TypeMismatch, match="torch.bitwise_not of torch.float32 values"):
        bound = bitwise_of_floats.bind((randn(8),))
        bound.to_triton_code(bound.config_spec.default_config())
