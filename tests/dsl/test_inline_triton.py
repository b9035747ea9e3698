"""Corpus: Helion's `hl.inline_triton` (Triton snippets inside a kernel, with positional and named
operands: device values, host scalars, a host tensor's pointer, numbers; one or several values
out, or a snippet of statements only) and `hl.triton_kernel` (calls of @triton.jit functions and
of a function's source, copied into the generated module), and their errors."""
import pytest
import torch
import triton
import triton.language as tl

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randn


@helion.kernel()
def leaky_and_pairs(x: torch.Tensor, y: torch.Tensor, slope: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A leaky ReLU from a one-line snippet; sum and difference from a snippet of statements that
    assigns `x` (renamed: the kernel's pointer `x` stays), both values out as a tuple."""
    leaky = torch.empty_like(x)
    total = torch.empty_like(x)
    diff = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        a, b = x[tile], y[tile]
        leaky[tile] = hl.inline_triton("tl.where({0} > 0, {0}, {0} * {1})", [a, slope], a)
        total[tile], diff[tile] = hl.inline_triton(
            """
            x = {a} + {b}
            d = {a} - {b}
            (x, d * {scale})
            """,
            {"a": a, "b": b, "scale": 2},
            (a, b),
        )
    return leaky, total, diff


@pytest.mark.parametrize("n", [1, 77])
def test_inline_triton_snippets(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    check_kernel(leaky_and_pairs, (x, y, 0.1),
                 lambda x, y, slope: (torch.where(x > 0, x, x * slope), x + y, (x - y) * 2))


@helion.kernel()
def snippet_store(x: torch.Tensor) -> torch.Tensor:
    """A snippet of statements only (output_like=None) storing through a host tensor's pointer."""
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        doubled = x[tile] * 2.0
        hl.inline_triton("tl.store({0} + {1}, {2}, mask={1} < {3})", [out, tile.index, doubled, x.size(0)], None)
    return out


@pytest.mark.parametrize("n", [1, 45])
def test_inline_triton_without_output(n, device):
    check_kernel(snippet_store, (randn(n, device=device),), lambda x: x * 2.0)


@helion.kernel()
def snippet_of_a_statement_for_a_value(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = hl.inline_triton("y = {0} + 1", [x[tile]], x[tile])
    return out


@helion.kernel()
def snippet_with_a_missing_operand(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = hl.inline_triton("{0} + {1}", [x[tile]], x[tile])
    return out


@helion.kernel()
def snippet_of_the_wrong_dtype(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = hl.inline_triton("{0}.to(tl.int32)", [x[tile]], x[tile])
    return out


@pytest.mark.parametrize("kernel,message", [
    (snippet_of_a_statement_for_a_value, "the snippet's last statement must be an expression"),
    (snippet_with_a_missing_operand, "IndexError"),
])
def test_inline_triton_misuse_is_a_dsl_error(kernel, message):
    x = randn(6)
    with pytest.raises(exc.NotSupported, match=message):
        kernel.bind((x,)).to_triton_code(kernel.bind((x,)).config_spec.default_config())


def test_inline_triton_checks_the_dtype_it_was_promised(device):
    with pytest.raises(Exception, match="hl.inline_triton: a torch.float32 value expected"):
        snippet_of_the_wrong_dtype(randn(6, device=device))


SCALE = 3


@triton.jit
def _scaled_add(a, b, scale: tl.constexpr):
    return a + b * scale


@triton.jit
def _twice_scaled_add(a, b):
    """Calls another jit function with a global of its module."""
    return _scaled_add(a, b, SCALE) * 2


@helion.kernel()
def jit_function_calls(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """hl.triton_kernel of a jit function (copied with the one it calls), with keyword operands,
    and of a function's source returning two values."""
    added = torch.empty_like(x)
    high = torch.empty_like(x)
    low = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        a, b = x[tile], y[tile]
        added[tile] = hl.triton_kernel(_twice_scaled_add, {"b": b, "a": a}, a)
        high[tile], low[tile] = hl.triton_kernel(
            """
            def extremes(a, b):
                return tl.maximum(a, b), tl.minimum(a, b)
            """, [a, b], [a, b])
    return added, high, low


@pytest.mark.parametrize("n", [1, 60])
def test_triton_kernel_calls(n, device):
    x, y = randn(n, device=device), randn(n, device=device)
    check_kernel(jit_function_calls, (x, y),
                 lambda x, y: ((x + y * 3) * 2, torch.maximum(x, y), torch.minimum(x, y)))


SHIFTS = [1, 2]


@triton.jit
def _reads_a_list(a):
    return a + SHIFTS[0]


@helion.kernel()
def jit_function_of_a_global_list(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = hl.triton_kernel(_reads_a_list, [x[tile]], x[tile])
    return out


def test_triton_kernel_of_a_global_it_cannot_copy():
    x = randn(6)
    with pytest.raises(exc.NotSupported, match="reads the global 'SHIFTS' \\(a list\\), which the generated module cannot hold"):
        jit_function_of_a_global_list.bind((x,)).to_triton_code(jit_function_of_a_global_list.bind((x,)).config_spec.default_config())
