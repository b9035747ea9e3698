"""Corpus: integer and float `//` and `%` in device code round as PyTorch (toward negative
infinity; the remainder takes the divisor's sign), not as Triton's C-style integer operators; where
both operands are known >= 0 (tile indices, sizes, block sizes and what +, *, // compute of them)
the generated code keeps Triton's plain operators. Also torch.div's rounding modes, floor_divide
and the other arithmetic functions."""
import ast

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc
from build_tools.dsl.sizes import SizeTracker

from ._harness import check_kernel, code_without_comments, randint, randn


@helion.kernel()
def divide_and_remainder(x: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
    (n,) = x.size()
    out = torch.empty([6, n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(n):
        a, b = x[tile], y[tile]
        out[0, tile] = a // b
        out[1, tile] = a % b
        out[2, tile] = a // 3 + (a % 3) * 10
        out[3, tile] = a // -3 + (a % -3) * 10
        out[4, tile] = a // k + (a % k) * 100
        out[5, tile] = torch.floor_divide(a, b) + torch.remainder(a, -7) * 10
    return out


def divide_and_remainder_reference(x, y, k):
    return torch.stack([x // y, x % y, x // 3 + (x % 3) * 10, x // -3 + (x % -3) * 10, x // k + (x % k) * 100,
                        torch.floor_divide(x, y) + torch.remainder(x, -7) * 10])


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("n", [1, 77])
@pytest.mark.parametrize("k", [5, -4])
def test_integer_division_rounds_down(n, k, dtype, device):
    x = randint(-50, 50, n, device=device).to(dtype)
    y = randint(1, 9, n, device=device).to(dtype) * torch.where(randint(0, 2, n) > 0, 1, -1).to(device, dtype)
    x[0] = -7  # a negative dividend in every size
    check_kernel(divide_and_remainder, (x, y, k), divide_and_remainder_reference)


@helion.kernel()
def float_divide(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([7, m, n], dtype=x.dtype, device=x.device)
    for tile in hl.tile(m):
        a, b = x[tile, :], y[tile, :]
        out[0, tile, :] = a // b
        out[1, tile, :] = a % b
        out[2, tile, :] = torch.div(a, b, rounding_mode="trunc")
        out[3, tile, :] = a.div(b, rounding_mode="floor") + a.div(b)
        out[4, tile, :] = torch.trunc(a * 3) + torch.neg(a)
        out[5, tile, :] = torch.add(a, b, alpha=2) + a.sub(b, alpha=0.5) + torch.mul(a, b)
        out[6, tile, :] = torch.true_divide(a, b) - a.floor_divide(0.1)
    return out


def float_divide_reference(x, y):
    return torch.stack([x // y, x % y, torch.div(x, y, rounding_mode="trunc"),
                        x.div(y, rounding_mode="floor") + x / y, torch.trunc(x * 3) - x,
                        x + 2 * y + (x - 0.5 * y) + x * y, x / y - x.floor_divide(0.1)])


@pytest.mark.parametrize("shape", [(1, 1), (5, 33)])
def test_float_division_as_pytorch(shape, device):
    x = randn(*shape, device=device) * 8
    y = randn(*shape, device=device).abs() + 0.25
    y = y * torch.where(randn(*shape) > 0, 1.0, -1.0).to(device)
    x.view(-1)[0] = 1.0  # 1.0 // 0.1 is 9 (the rounded quotient 10 floors to 10)
    check_kernel(float_divide, (x, y), float_divide_reference, rtol=1e-6, atol=1e-5)


def test_float_floor_division_of_exact_case(device):
    """1.0 // 0.1 and -1.0 // 0.1 in float32: 9 and -10 as PyTorch, not floor(1.0 / 0.1) = 10."""
    x = torch.tensor([[1.0, -1.0, 0.3, 7.0]])
    y = torch.full_like(x, 0.1)
    out = float_divide.bind((x.to(device), y.to(device))).compile_config(helion.Config(block_sizes=[1]))(x.to(device), y.to(device))
    torch.testing.assert_close(out[0].cpu(), x // y, rtol=0, atol=0)
    assert out[0, 0, 0].item() == 9.0


@helion.kernel()
def index_arithmetic(x: torch.Tensor) -> torch.Tensor:
    (n,) = x.size()
    half = n // 2 + 1
    out = torch.empty([3, n], dtype=torch.int32, device=x.device)
    for tile in hl.tile(n):
        i = tile.index
        out[0, tile] = i // 3 + (i % 5) * 100
        out[1, tile] = (tile.end + 7 - 1) // 7 + i // half
        out[2, tile] = (i - 4) // 3
    return out


def test_known_non_negative_operands_keep_plain_operators(device):
    x = randn(29, device=device)
    bound = index_arithmetic.bind((x,))
    config = helion.Config(block_sizes=[8])
    code = code_without_comments(bound.to_triton_code(config))
    # i // 3, i % 5, (end + 6) // 7 and i // half need no fix; only (i - 4) // 3 does (one `tl.where`)
    assert code.count("tl.where") == 1, code
    out = bound.compile_config(config)(x)
    i = torch.arange(29)
    end = torch.clamp((i // 8 + 1) * 8, max=29)
    expected = torch.stack([i // 3 + (i % 5) * 100, (end + 6) // 7 + i // (29 // 2 + 1), (i - 4) // 3]).to(torch.int32)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)


def test_host_values_known_non_negative():
    x = torch.empty(3, 4, device="meta")
    env = {"x": x, "k": -2, "bs": 16}
    fixed = {"bs"}

    def evaluate(node):
        try:
            return eval(compile(ast.Expression(node), "<t>", "eval"), {}, env)
        except NameError:
            return None

    tracker = SizeTracker(evaluate, lambda node: isinstance(node, ast.Name) and node.id in fixed)
    for stmt in ("m, n = x.size()", "d = x.shape[-1] * 2 + bs", "c = min(m, n) // 3 % d", "w = max(k, m)", "e = m - 1",
                 "f = k", "g = n if k else 0"):
        tracker.before(ast.parse(stmt).body[0])
        exec(stmt, {}, env)
    known = tracker.non_negative_names
    assert {"m", "n", "d", "c", "w", "g"} <= known and not {"e", "f"} & known
    assert not tracker.is_non_negative(ast.parse("k * m", mode="eval").body)
    assert not tracker.is_non_negative(ast.parse("x.numel() % k", mode="eval").body)  # Python's % takes k's sign
    assert tracker.is_non_negative(ast.parse("k % x.numel() + len(x)", mode="eval").body)
    tracker.before(ast.parse("m -= 1").body[0])
    assert "m" not in tracker.non_negative_names


def test_div_rounding_mode_checked():
    x = torch.randn(4, 4)
    with pytest.raises(exc.NotSupported, match="rounding_mode"):
        @helion.kernel()
        def bad(x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            for tile in hl.tile(x.size(0)):
                out[tile, :] = torch.div(x[tile, :], 2.0, rounding_mode="round")
            return out

        bad.bind((x,)).compile_config(helion.Config(block_sizes=[4]))(x)
