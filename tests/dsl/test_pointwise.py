"""Corpus: pointwise programs (operators, torch math functions, casts, value constructors, scalars)."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, rand_positive, randint, randn


@helion.kernel
def add_any_rank(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(out.size()):
        out[tile] = x[tile] + y[tile]
    return out


@pytest.mark.parametrize("shape", [(1,), (37,), (1, 1), (5, 19), (3, 1, 17), (2, 3, 2, 5)])
def test_add_any_rank(shape, device):
    x, y = randn(*shape, device=device), randn(*shape, device=device)
    check_kernel(add_any_rank, (x, y), lambda x, y: x + y)


@helion.kernel()
def transcendental(a: torch.Tensor, p: torch.Tensor):
    e = torch.empty_like(a)
    e2 = torch.empty_like(a)
    ln = torch.empty_like(a)
    lg2 = torch.empty_like(a)
    for tile in hl.tile(a.size(0)):
        e[tile] = torch.exp(a[tile])
        e2[tile] = torch.exp2(a[tile])
        ln[tile] = torch.log(p[tile])
        lg2[tile] = torch.log2(p[tile])
    return e, e2, ln, lg2


@pytest.mark.parametrize("n", [1, 77, 130])
def test_transcendental(n, device):
    a, p = randn(n, device=device), rand_positive(n, device=device)
    check_kernel(transcendental, (a, p),
                 lambda a, p: (torch.exp(a), torch.exp2(a), torch.log(p), torch.log2(p)))


@helion.kernel()
def roots_and_activations(a: torch.Tensor, p: torch.Tensor):
    m, n = a.size()
    roots = torch.empty([m, n, 2], dtype=a.dtype, device=a.device)
    acts = torch.empty([3, m, n], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile([m, n]):
        roots[tile_m, tile_n, 0] = torch.sqrt(p[tile_m, tile_n])
        roots[tile_m, tile_n, 1] = torch.rsqrt(p[tile_m, tile_n])
        values = a[tile_m, tile_n]
        acts[0, tile_m, tile_n] = torch.tanh(values)
        acts[1, tile_m, tile_n] = torch.sigmoid(values)
        acts[2, tile_m, tile_n] = torch.abs(values)
    return roots, acts


@pytest.mark.parametrize("shape", [(1, 1), (5, 21), (20, 3)])
def test_roots_and_activations(shape, device):
    a, p = randn(*shape, device=device), rand_positive(*shape, device=device)
    check_kernel(
        roots_and_activations, (a, p),
        lambda a, p: (torch.stack([p.sqrt(), p.rsqrt()], dim=-1),
                      torch.stack([a.tanh(), a.sigmoid(), a.abs()])))


@helion.kernel()
def binary_ops(x: torch.Tensor, y: torch.Tensor, p: torch.Tensor):
    arith = torch.empty_like(x)
    select = torch.empty_like(x)
    compared = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        a, b = x[tile], y[tile]
        arith[tile] = (a - b) * 0.5 + a / (p[tile] + 1.0) - (-b) ** 2 + p[tile] ** 0.5
        select[tile] = (torch.maximum(a, b) + torch.minimum(a, b) * 2.0
                        + torch.where(a > b, a, b * 3.0) + torch.clamp(a, min=-0.5, max=0.25))
        compared[tile] = ((a >= b).to(x.dtype) + (a < 0.1).to(x.dtype) * 2.0
                          + (a == a).to(x.dtype) * 4.0 + (b != b).to(x.dtype) * 8.0)
    return arith, select, compared


def _binary_ops_reference(x, y, p):
    arith = (x - y) * 0.5 + x / (p + 1.0) - (-y) ** 2 + p ** 0.5
    select = (torch.maximum(x, y) + torch.minimum(x, y) * 2.0
              + torch.where(x > y, x, y * 3.0) + torch.clamp(x, min=-0.5, max=0.25))
    compared = (x >= y).double() + (x < 0.1).double() * 2.0 + 4.0
    return arith, select, compared


@pytest.mark.parametrize("shape", [(1,), (67,), (3, 30)])
def test_binary_ops(shape, device):
    args = (randn(*shape, device=device), randn(*shape, device=device),
            rand_positive(*shape, device=device))
    check_kernel(binary_ops, args, _binary_ops_reference)


@helion.kernel()
def axpby_shift(x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float, shift: int) -> torch.Tensor:
    inv_rows = 1.0 / x.size(0)
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = alpha * x[tile_m, tile_n] + beta * y[tile_m, tile_n] + shift * inv_rows
    return out


@pytest.mark.parametrize("shape", [(1, 3), (5, 30)])
def test_scalar_arguments(shape, device):
    x, y = randn(*shape, device=device), randn(*shape, device=device)
    alpha, beta, shift = float(torch.rand(()) * 3 - 1.5), float(torch.rand(()) + 0.1), 7
    check_kernel(axpby_shift, (x, y, alpha, beta, shift),
                 lambda x, y, a, b, s: a * x + b * y + s / x.size(0))


@helion.kernel()
def half_roundtrip(x: torch.Tensor, idx: torch.Tensor):
    out_half = torch.empty_like(x)
    out_float = torch.empty(x.size(), dtype=torch.float32, device=x.device)
    for tile in hl.tile(x.size(0)):
        wide = x[tile].to(torch.float32)
        wide = wide * 3.0 + idx[tile].to(torch.float32)
        out_float[tile] = wide
        out_half[tile] = wide.to(torch.float16)
    return out_half, out_float


@pytest.mark.parametrize("n", [1, 100])
def test_dtype_casts(n, device):
    x, idx = randn(n, dtype=torch.float16, device=device), randint(-50, 50, n, device=device)
    check_kernel(half_roundtrip, (x, idx),
                 lambda x, idx: ((x * 3.0 + idx.double()), (x * 3.0 + idx.double())))


@helion.kernel()
def small_ints_to_bfloat16(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    out = torch.empty(a.size(), dtype=torch.bfloat16, device=a.device)
    for tile in hl.tile(a.size(0)):
        out[tile] = a[tile].to(torch.bfloat16) + b[tile].to(torch.bfloat16) * c[tile].to(torch.bfloat16)
    return out


@pytest.mark.parametrize("n", [1, 77])
def test_small_ints_convert_to_bfloat16_exactly(n, device):
    # int8 / uint8 / int16 values whose results bfloat16 holds exactly (|a + b * c| < 256)
    a = randint(-64, 64, n, device=device).to(torch.int8)
    b = randint(0, 8, n, device=device).to(torch.uint8)
    c = randint(-16, 16, n, device=device).to(torch.int16)
    check_kernel(small_ints_to_bfloat16, (a, b, c), lambda a, b, c: a.double() + b.double() * c.double(),
                 rtol=0, atol=0)


@helion.kernel()
def value_constructors(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        values = x[tile]
        acc = torch.zeros_like(values)
        acc = acc + values * 2.0
        threes = torch.full_like(values, 3.0)
        halves = hl.full([tile], 0.5, dtype=x.dtype)
        zeros = hl.zeros([tile], dtype=torch.float32)
        newz = values.new_zeros([tile]) + 1.0
        out[tile] = acc + threes + halves + zeros + newz
    return out


@pytest.mark.parametrize("n", [1, 45, 130])
def test_value_constructors(n, device):
    x = randn(n, device=device)
    check_kernel(value_constructors, (x,), lambda x: x * 2.0 + 4.5)


@helion.kernel()
def int_arithmetic(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    for tile in hl.tile(a.size(0)):
        out[tile] = a[tile] * 3 + b[tile] - (a[tile] % 5) + (b[tile] // 4)
    return out


@pytest.mark.parametrize("n", [1, 63])
def test_int_arithmetic(n, device):
    a, b = randint(0, 1000, n, device=device), randint(1, 1000, n, device=device)
    check_kernel(int_arithmetic, (a, b), lambda a, b: a * 3 + b - a % 5 + b // 4)


@helion.kernel()
def compare_masks(x: torch.Tensor, y: torch.Tensor):
    greater = torch.empty(x.size(), dtype=torch.bool, device=x.device)
    both = torch.empty(x.size(), dtype=torch.bool, device=x.device)
    for tile in hl.tile(x.size(0)):
        a, b = x[tile], y[tile]
        greater[tile] = a > b
        both[tile] = (a > 0) & (b > 0) | (a < -1.0)
    return greater, both


@pytest.mark.parametrize("n", [1, 70])
def test_boolean_outputs(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    check_kernel(compare_masks, (x, y), lambda x, y: (x > y, (x > 0) & (y > 0) | (x < -1.0)))


@pytest.mark.parametrize("shape", [(1,), (3, 33)])
def test_add_bfloat16(shape, device):
    x = randn(*shape, dtype=torch.bfloat16, device=device)
    y = randn(*shape, dtype=torch.bfloat16, device=device)
    check_kernel(add_any_rank, (x, y), lambda x, y: x + y)


@helion.kernel()
def power_and_truncate(base: torch.Tensor, exponent: torch.Tensor):
    powered = torch.empty_like(base)
    truncated = torch.empty(base.size(), dtype=torch.int32, device=base.device)
    for tile in hl.tile(base.size(0)):
        powered[tile] = base[tile] ** exponent[tile]
        truncated[tile] = (exponent[tile] * 10.0).to(torch.int32)
    return powered, truncated


@pytest.mark.parametrize("n", [1, 80])
def test_tensor_exponent_and_float_to_int(n, device):
    base, exponent = rand_positive(n, device=device), randn(n, device=device)
    check_kernel(power_and_truncate, (base, exponent),
                 lambda b, e: (b ** e, (e.float() * 10.0).to(torch.int32)))


@helion.kernel()
def float_floor_division(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`//` and `%` of floats as PyTorch's (flooring; the remainder takes the divisor's sign), by a
    tensor and by a negative constant. The divisors are powers of two, so the quotients are
    exact in float32 and their floors cannot differ from the float64 reference's."""
    quotient = torch.empty_like(x)
    remainder = torch.empty_like(x)
    by_constant = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        quotient[tile] = x[tile] // y[tile]
        remainder[tile] = x[tile] % y[tile]
        by_constant[tile] = x[tile] % -0.5 + x[tile] // -0.5
    return quotient, remainder, by_constant


@pytest.mark.parametrize("n", [1, 90])
def test_float_floor_division_and_remainder_follow_pytorch(n, device):
    x = randn(n, device=device) * 4
    y = (2.0 ** torch.randint(-2, 3, (n,)) * torch.where(torch.rand(n) > 0.5, 1.0, -1.0)).to(device)
    check_kernel(float_floor_division, (x, y), lambda x, y: (x // y, x % y, x % -0.5 + x // -0.5))
