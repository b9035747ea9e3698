"""Error reporting: unsupported constructs and shape mismatches in device code raise helion.exc.* errors
whose message names the construct and the kernel's file:line."""
import os

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import randn

THIS_FILE = os.path.basename(__file__)


def line_of(marker: str) -> int:
    """1-based line number of the unique source line carrying `# <marker>` in this file."""
    with open(__file__) as source:
        lines = [number for number, text in enumerate(source, start=1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def compile_and_run(kernel, args):
    bound = kernel.bind(args)
    config = bound.config_spec.default_config()
    bound.to_triton_code(config)
    bound.compile_config(config)(*args)


def expect_dsl_error(kernel, args, marker, construct_words):
    with pytest.raises(helion.exc.Base) as info:
        compile_and_run(kernel, args)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of(marker)}" in message, message
    assert any(word.lower() in message.lower() for word in construct_words), message
    assert isinstance(info.value, Exception)


@helion.kernel()
def uses_while(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        values = x[tile]
        while values.sum() > 1.0:  # ERR-while
            values = values * 0.5
        out[tile] = values
    return out


def test_while_in_device_code():
    expect_dsl_error(uses_while, (randn(20),), "ERR-while", ["while"])


@helion.kernel()
def uses_try(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        try:  # ERR-try
            out[tile] = x[tile] + 1.0
        except RuntimeError:
            out[tile] = x[tile]
    return out


def test_try_in_device_code():
    expect_dsl_error(uses_try, (randn(20),), "ERR-try", ["try"])


@helion.kernel()
def calls_unknown_function(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.fft.fft(x[tile]).real  # ERR-unknown
    return out


def test_unknown_function_on_tile():
    expect_dsl_error(calls_unknown_function, (randn(20),), "ERR-unknown", ["fft"])


@helion.kernel()
def nested_while(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m in hl.tile(x.size(0)):
        for tile_n in hl.tile(x.size(1)):
            count = 0
            while count < 2:  # ERR-nested-while
                count += 1
            out[tile_m, tile_n] = x[tile_m, tile_n] + count
    return out


def test_while_in_inner_device_loop():
    expect_dsl_error(nested_while, (randn(4, 8),), "ERR-nested-while", ["while"])


@helion.kernel()
def uses_break(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    for tile_m in hl.tile(x.size(0)):
        for tile_n in hl.tile(x.size(1)):
            out[tile_m, tile_n] = x[tile_m, tile_n]
            break  # ERR-break
    return out


def test_break_in_device_loop():
    expect_dsl_error(uses_break, (randn(4, 40),), "ERR-break", ["break"])


@helion.kernel()
def mismatched_broadcast(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n]):
        out[tile_m, tile_n] = x[tile_m, tile_n] + bias[tile_m]  # ERR-shape
    return out


@pytest.mark.parametrize("shape", [(8, 16), (12, 12)])
def test_shape_mismatch_in_device_code(shape):
    x, bias = randn(*shape), randn(shape[0])
    expect_dsl_error(mismatched_broadcast, (x, bias), "ERR-shape", ["shape", "broadcast"])


@helion.kernel()
def mismatched_store(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        out[tile_m] = x[tile_m, tile_n]  # ERR-store-shape
    return out


def test_store_shape_mismatch():
    expect_dsl_error(mismatched_store, (randn(6, 10),), "ERR-store-shape", ["shape", "broadcast", "store"])


def test_error_classes_share_a_base():
    assert issubclass(helion.exc.Base, Exception)
    assert issubclass(helion.exc.InvalidConfig, helion.exc.Base)
