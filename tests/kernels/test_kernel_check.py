"""The test harness itself: poisoned allocations expose elements a kernel never writes."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from kernel_check import check_op, poisoned_allocations, run_config


@helion.kernel(static_shapes=False)
def copy_first_half(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0) // 2):
        out[tile] = x[tile]
    return out


def test_allocations_are_poisoned_inside_the_block():
    with poisoned_allocations():
        floats = torch.empty(5)
        ints = torch.empty_like(torch.ones(3, dtype=torch.int64))
        halves = torch.ones(2).new_empty(4, dtype=torch.float16)
    assert torch.isnan(floats).all() and torch.isnan(halves).all() and (ints == -1).all()
    assert torch.empty(3).dtype == torch.float32  # restored afterwards


def test_unwritten_kernel_outputs_fail_the_comparison(device):
    x = torch.randn(10, device=device)
    bound = copy_first_half.bind((x,))
    out = run_config(bound, bound.config_spec.default_config(), (x,))
    assert torch.equal(out[:5], x[:5])
    assert torch.isnan(out[5:]).all()
    with pytest.raises(AssertionError, match="copy_first_half"):
        check_op(copy_first_half, (x,), x.double(), (1e-5, 1e-5), "copy_first_half", random_seeds=())
