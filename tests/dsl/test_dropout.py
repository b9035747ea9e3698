"""Corpus: F.dropout / torch.dropout in device code: the share of zeros near p, the kept elements
scaled by 1 / (1 - p), a host scalar p, p = 0, p = 1 and training=False, bf16; draws that differ
from call to call and repeat under torch.manual_seed; and the arguments refused."""
import math

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import randn


@helion.kernel()
def dropped(x: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    out = torch.empty_like(x)
    other = torch.empty_like(x)
    for tile in hl.tile(m):
        out[tile, :] = torch.nn.functional.dropout(x[tile, :], p)
        other[tile, :] = torch.dropout(x[tile, :] * 2.0, 0.25, True)
    return out, other


def _check_dropout(out, x, p):
    """Zeros in about a share p of the elements (within 5 standard deviations), the rest x / (1 - p)."""
    zeros = out == 0
    share = zeros.double().mean().item()
    assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / x.numel()) + 1e-9, f"dropped {share:.4f} of the elements, p={p}"
    torch.testing.assert_close(out[~zeros].double(), (x[~zeros].double() / (1 - p)), rtol=1e-2 if x.dtype == torch.bfloat16 else 1e-6,
                               atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_zeroes_a_share_p_and_scales_the_rest(p, dtype, device):
    x = randn(97, 301, dtype=dtype, device=device)
    out, other = dropped(x, p)
    _check_dropout(out.cpu(), x.cpu(), p)
    _check_dropout(other.cpu(), (x * 2.0).cpu(), 0.25)
    assert not torch.equal(out == 0, other == 0)  # the two sites draw independent streams


def test_dropout_draws_differ_per_call_and_repeat_under_a_seed(device):
    x = randn(64, 128, device=device)
    torch.manual_seed(7)
    first = dropped(x, 0.5)[0]
    second = dropped(x, 0.5)[0]
    torch.manual_seed(7)
    again = dropped(x, 0.5)[0]
    assert not torch.equal(first, second)
    assert torch.equal(first, again)


@helion.kernel()
def dropout_forms(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    none, every, off = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        v = x[tile, :]
        none[tile, :] = torch.nn.functional.dropout(v, 0.0)
        every[tile, :] = torch.nn.functional.dropout(v, p=1.0)
        off[tile, :] = torch.nn.functional.dropout(v, 0.5, training=False)
    return none, every, off


def test_dropout_of_zero_one_and_not_training(device):
    x = randn(33, 70, device=device)
    x[0, 0] = float("nan")
    none, every, off = dropout_forms(x)
    torch.testing.assert_close(none, x, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(off, x, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(every, x * 0.0, equal_nan=True, rtol=0, atol=0)  # PyTorch's p=1: NaN stays NaN


@helion.kernel()
def dropout_in_place(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.nn.functional.dropout(x[tile, :], 0.5, True, True)
    return out


@helion.kernel()
def dropout_of_bad_p(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = torch.nn.functional.dropout(x[tile, :], 1.5)
    return out


@pytest.mark.parametrize("kernel,error,message", [
    (dropout_in_place, exc.NotSupported, "inplace=True"),
    (dropout_of_bad_p, exc.ShapeMismatch, "probability 1.5 is not between 0 and 1"),
])
def test_refused_dropout_arguments(kernel, error, message):
    with pytest.raises(error, match=message):
        bound = kernel.bind((randn(8, 16),))
        bound.to_triton_code(bound.config_spec.default_config())
