"""Checks of the corpus harness itself: a kernel that leaves outputs unwritten or computes the wrong
value must fail `check_kernel`, so the corpus tests can fail."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, poison_, randn


@helion.kernel()
def writes_first_half(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(0, x.size(0) // 2):
        out[tile] = x[tile] * 2.0
    return out


@helion.kernel()
def writes_first_half_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    for tile in hl.tile(0, x.size(0) // 2):
        out[tile] = x[tile] * 2.0
    return out


def test_unwritten_host_allocated_output_fails(device):
    with pytest.raises(AssertionError):
        check_kernel(writes_first_half, (randn(40, device=device),), lambda x: x * 2.0, n_random=0)


def test_unwritten_argument_output_fails(device):
    x = randn(40, device=device)
    out = x * 2.0
    with pytest.raises(AssertionError):
        check_kernel(writes_first_half_into, (x, out), lambda x, out: x * 2.0, poison=[1], n_random=0)


def test_unpoisoned_argument_keeps_its_values(device):
    x = randn(40, device=device)
    check_kernel(writes_first_half_into, (x, x * 2.0), lambda x, out: x * 2.0, n_random=0)


def test_wrong_values_fail(device):
    x = randn(40, device=device)
    with pytest.raises(AssertionError):
        check_kernel(writes_first_half_into, (x, x * 2.0),
                     lambda x, out: torch.cat([x[:20] * 2.5, x[20:] * 2.0]), n_random=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int64, torch.bool])
def test_poison_marks_every_element(dtype):
    tensor = torch.zeros(7, dtype=dtype)
    poison_(tensor)
    if dtype.is_floating_point:
        assert torch.isnan(tensor).all()
    elif dtype == torch.bool:
        assert tensor.all()
    else:
        assert (tensor == torch.iinfo(dtype).max).all()
