"""Calls of Python functions in device code are inlined (build_tools/dsl/inline.py): a lambda or def
passed as a kernel argument (or left at its default), a module-level helper, a helper calling
another, closures over host tensors and Python numbers, keyword arguments and defaults. Closure
values reach the kernel as arguments that the launcher reads from the function at call time, so a
second closure of the same code runs the same kernel; other code compiles another one. What cannot
be inlined raises helion.exc.NotSupported at the kernel's call site."""
from __future__ import annotations

import ast
import os
import sys
from typing import Callable

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.kernel import load_module

from ._harness import DEVICE, check_kernel, code_without_comments, randn

# products: fp32 dots run as TF32 on a GPU (as test_compat's matmul allows)
DOT = {} if DEVICE == "cpu" else {"rtol": 2e-2, "atol": 2e-2}

THIS_FILE = os.path.basename(__file__)


def line_of(marker: str) -> int:
    """1-based line number of the unique source line carrying `# <marker>` in this file."""
    with open(__file__) as source:
        lines = [number for number, text in enumerate(source, start=1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


# ---------------------------------------------------------------------- module-level helpers
def softplus(v):
    return torch.log(1.0 + torch.exp(v))


def gated(v, gate, *, scale=2.0, offset=0.5):
    """A helper with statements before its return, calling another helper, with keyword defaults."""
    smooth = softplus(v)
    weight = torch.sigmoid(gate)
    return smooth * weight * scale + offset


def row_mean(x, tile_m, n):
    """A helper holding a device loop whose carried value its return reads."""
    total = hl.zeros([tile_m], dtype=torch.float32)
    for tile_n in hl.tile(n):
        total = total + x[tile_m, tile_n].sum(dim=1)
    return total / n


def accumulate(acc, a, b):
    """A helper called inside the reduction loop with its carried accumulator."""
    return torch.addmm(acc, a, b)


def make_shift(amount):
    def shift(v):
        return v + amount

    return shift


shift_by_three = make_shift(3)  # a module-level closure over a Python number


# ---------------------------------------------------------------------- kernels
@helion.kernel()
def matmul_epilogue(x: torch.Tensor, y: torch.Tensor,
                    epilogue: Callable[[torch.Tensor, tuple], torch.Tensor] = lambda acc, tile: acc) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = epilogue(acc, (tile_m, tile_n))
    return out


@helion.kernel()
def matmul_through_helper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = accumulate(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


@helion.kernel()
def gated_shift(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = shift_by_three(gated(x[tile], g[tile], offset=-1.0))
    return out


@helion.kernel()
def gated_positional_scale(x: torch.Tensor, g: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = gated(gate=g[tile], v=x[tile], scale=scale)
    return out


@helion.kernel()
def center_rows(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        mean = row_mean(x, tile_m, n)
        for tile_n in hl.tile(n):
            out[tile_m, tile_n] = x[tile_m, tile_n] - mean[:, None]
    return out


@helion.kernel()
def apply(x: torch.Tensor, fn: Callable) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = fn(x[tile_m, tile_n], (tile_m, tile_n))  # apply-call
    return out


def launcher_of(bound) -> str:
    return bound.generate(bound.config_spec.default_config()).launcher


def standalone(bound):
    """The generated module of `bound`'s default config, checked to import only torch, triton and
    the standard library, then loaded."""
    code = bound.to_triton_code(bound.config_spec.default_config())
    imported = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert all(name in ("torch", "triton") or name in sys.stdlib_module_names for name in imported), imported
    assert "build_tools" not in code_without_comments(code).split('"""', 2)[2]
    return load_module(code)


# ---------------------------------------------------------------------- epilogues
@pytest.mark.parametrize("m,k,n", [(37, 19, 45), (1, 5, 3)])
def test_matmul_epilogue_closing_over_a_bias(m, k, n, device):
    x, y, bias, rows = randn(m, k, device=device), randn(k, n, device=device), randn(n, device=device), randn(m, device=device)

    def relu_bias(acc, tile):
        return torch.relu(acc + bias[tile[1]])

    check_kernel(matmul_epilogue, (x, y, relu_bias),
                 lambda x, y, _: torch.relu(x @ y + bias.double().cpu()), **DOT)
    scaled = lambda acc, tile: acc * rows[tile[0]][:, None] - bias[tile[1]]  # noqa: E731
    check_kernel(matmul_epilogue, (x, y, scaled),
                 lambda x, y, _: (x @ y) * rows.double().cpu()[:, None] - bias.double().cpu(), **DOT)
    check_kernel(matmul_epilogue, (x, y), lambda x, y: x @ y, **DOT)
    # three codes, three kernels
    assert len({id(matmul_epilogue.bind((x, y, f))) for f in (relu_bias, scaled)} | {id(matmul_epilogue.bind((x, y)))}) == 3


def test_same_code_other_closure_runs_the_same_kernel(device):
    m, k, n = 21, 13, 30
    x, y = randn(m, k, device=device), randn(k, n, device=device)

    def with_bias(bias, factor):
        return lambda acc, tile: (acc + bias[tile[1]]) * factor

    first, second = randn(n, device=device), randn(n, device=device)
    f1, f2 = with_bias(first, 2.0), with_bias(second, -0.5)
    bound = matmul_epilogue.bind((x, y, f1))
    assert matmul_epilogue.bind((x, y, f2)) is bound
    assert "epilogue.__closure__[0].cell_contents" in launcher_of(bound)
    module = standalone(bound)
    expected = x.double().cpu() @ y.double().cpu()
    for fn, bias, factor in ((f1, first, 2.0), (f2, second, -0.5), (f1, first, 2.0)):
        for out in (matmul_epilogue(x, y, fn), module.matmul_epilogue(x, y, fn)):
            torch.testing.assert_close(out.double().cpu(), (expected + bias.double().cpu()) * factor,
                                       **(DOT or {"rtol": 1e-4, "atol": 1e-4}))
    # a closure tensor of another shape is another specialization (shapes are static here)
    longer = with_bias(randn(n + 1, device=device), 1.0)
    assert matmul_epilogue.bind((x, y, longer)) is not bound


def test_generated_code_is_deterministic(device):
    x, y, bias = randn(9, 7, device=device), randn(7, 11, device=device), randn(11, device=device)
    fn = lambda acc, tile: acc + bias[tile[1]]  # noqa: E731
    first = launcher_of(matmul_epilogue.bind((x, y, fn)))
    matmul_epilogue.reset()
    assert launcher_of(matmul_epilogue.bind((x, y, fn))) == first


# ---------------------------------------------------------------------- helpers
@pytest.mark.parametrize("shape", [(1, 1), (13, 37)])
def test_module_helpers_nested_with_keywords_and_defaults(shape, device):
    x, g = randn(*shape, device=device), randn(*shape, device=device)

    def softplus_ref(v):
        return torch.log(1.0 + torch.exp(v))

    check_kernel(gated_shift, (x, g), lambda x, g: softplus_ref(x) * torch.sigmoid(g) * 2.0 - 1.0 + 3)
    check_kernel(gated_positional_scale, (x, g, 0.75),
                 lambda x, g, s: softplus_ref(x) * torch.sigmoid(g) * s + 0.5)
    bound = gated_shift.bind((x, g))
    assert "shift_by_three.__closure__[0].cell_contents" in launcher_of(bound)
    torch.testing.assert_close(standalone(bound).gated_shift(x, g), gated_shift(x, g))


def test_helper_in_a_reduction_loop(device):
    x, y = randn(19, 40, device=device), randn(40, 23, device=device)
    check_kernel(matmul_through_helper, (x, y), lambda x, y: x @ y, **DOT)
    # the device loop is known to hold a dot (its config knobs) through the call
    assert [loop.has_dot for loop in matmul_through_helper.bind((x, y)).found.device_loops] == [True]


@pytest.mark.parametrize("shape", [(1, 1), (5, 70), (17, 33)])
def test_helper_with_a_device_loop(shape, device):
    x = randn(*shape, device=device)
    # a peeled loop compiles the helper's loop body twice: its memory sites stay the same ones
    check_kernel(center_rows, (x,), lambda x: x - x.mean(dim=1, keepdim=True),
                 overrides=[{"range_peel_tails": [True, True], "indexing": "block_ptr"}])


def test_closure_over_python_numbers(device):
    x = randn(11, 26, device=device)

    def affine(alpha, beta):
        return lambda v, tile: v * alpha + beta

    f1, f2 = affine(1.5, -2), affine(0.25, 3)
    check_kernel(apply, (x, f1), lambda x, _: x * 1.5 - 2)
    assert apply.bind((x, f2)) is apply.bind((x, f1))
    check_kernel(apply, (x, f2), lambda x, _: x * 0.25 + 3)
    torch.testing.assert_close(apply(x, f1).double().cpu(), x.double().cpu() * 1.5 - 2, rtol=1e-5, atol=1e-5)


def test_nested_closures_and_lambdas_on_one_line(device):
    x, bias = randn(7, 19, device=device), randn(19, device=device)
    add_bias = lambda v, tile: v + bias[tile[1]]  # noqa: E731
    twice = lambda v, tile: add_bias(v, tile) * 2.0  # noqa: E731
    check_kernel(apply, (x, twice), lambda x, _: (x + bias.double().cpu()) * 2.0)
    assert "fn.__closure__[0].cell_contents.__closure__[0].cell_contents" in launcher_of(apply.bind((x, twice)))
    plus, times = (lambda v, tile: v + 1.0), (lambda v, tile: v * 3.0)
    check_kernel(apply, (x, plus), lambda x, _: x + 1.0)
    check_kernel(apply, (x, times), lambda x, _: x * 3.0)

    def defaults(v, tile, low=-0.25, *, high=0.5):
        return torch.clamp(v, low, high)

    check_kernel(apply, (x, defaults), lambda x, _: torch.clamp(x, -0.25, 0.5))


# ---------------------------------------------------------------------- errors
def recursive(v, tile):
    return recursive(v, tile)


def variadic(*values):
    return values[0]


def generator(v, tile):
    yield v


def returns_early(v, tile):
    if v is not None:
        return v
    return -v


def uses_global_tensor(v, tile):
    return v + GLOBAL_TENSOR[tile[1]]


GLOBAL_TENSOR = torch.zeros(64)


def counter():
    count = 0

    def bump(v, tile):
        nonlocal count
        count = count + 1
        return v + count

    return bump


@helion.kernel()
def bad_handler_call(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = torch.where(x[tile])  # handler-call
    return out


@pytest.mark.parametrize("fn,words", [
    (recursive, ["recursive"]),
    (variadic, ["*args"]),
    (generator, ["generator"]),
    (returns_early, ["return inside"]),
    (uses_global_tensor, ["global tensor"]),
    (counter(), ["nonlocal"]),
    (eval("lambda v, tile: v + 1.0"), ["cannot find the source"]),
    (lambda v: v, ["argument"]),
    (lambda v, tile: v + not_defined_anywhere, ["not defined"]),  # noqa: F821
    (lambda v, tile: (lambda w: w)(v), ["lambda"]),
])
def test_unsupported_callees(fn, words, device):
    x = randn(4, 8, device=device)
    with pytest.raises(helion.exc.NotSupported) as info:
        apply.bind((x, fn))
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of('apply-call')}" in message, message
    assert any(word.lower() in message.lower() for word in words), message


def test_handler_signature_mismatch_names_the_call(device):
    with pytest.raises(helion.exc.NotSupported) as info:
        bad_handler_call.bind((randn(3, 5, device=device),))
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of('handler-call')}" in message and "torch.where" in message, message
