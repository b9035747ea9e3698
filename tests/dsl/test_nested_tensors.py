"""Corpus: NestedTensor arguments of torch.jagged layout, as Helion's jagged_dense_add takes them.
Host code reads `x.size(0)` (the batch) and `x.size(1)` (the longest component, a run-time
scalar); device code indexes `x[b, j, ...]` by a tile or an index over the batch and one over the
ragged dim, reading 0 past each component's end and storing nothing there."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, poison_, randn


@helion.kernel()
def jagged_dense_add_nested(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    B = x.size(0)
    max_len = x.size(1)
    out = y.clone()
    for tile_b in hl.tile(B):
        for tile_col in hl.tile(max_len):
            out[tile_b, tile_col] = out[tile_b, tile_col] + x[tile_b, tile_col]
    return out


@helion.kernel(static_shapes=False)
def ragged_sums(x: torch.Tensor) -> torch.Tensor:
    """out[b, d] = the sum over j of x[b, j, d], for x of shape [B, j, D]."""
    batches, longest, features = x.size(0), x.size(1), x.size(2)
    out = torch.empty([batches, features], dtype=torch.float32, device=x.device)
    for tile_b, tile_d in hl.tile([batches, features]):
        acc = hl.zeros([tile_b, tile_d], dtype=torch.float32)
        for tile_j in hl.tile(longest):
            acc = acc + x[tile_b, tile_j, tile_d].to(torch.float32).sum(dim=1)
        out[tile_b, tile_d] = acc
    return out


@helion.kernel()
def padded(x: torch.Tensor) -> torch.Tensor:
    """The components of x [B, j] as rows of a dense [B, longest] tensor, zero past their ends."""
    batches, longest = x.size(0), x.size(1)
    out = torch.empty([batches, longest], dtype=x.dtype, device=x.device)
    for b in hl.grid(batches):
        for tile_j in hl.tile(longest):
            out[b, tile_j] = x[b, tile_j]
    return out


@helion.kernel()
def scale_in_place(x: torch.Tensor, scale: float) -> torch.Tensor:
    batches, longest = x.size(0), x.size(1)
    for tile_b, tile_j in hl.tile([batches, longest]):
        x[tile_b, tile_j] = x[tile_b, tile_j] * scale
    return x


def nested(lengths: list, *rest: int, dtype=torch.float32, cached: bool = False) -> torch.Tensor:
    values = randn(sum(lengths), *rest, dtype=dtype)
    offsets = torch.tensor([0] + lengths).cumsum(0).to(values.device)
    return torch.nested.nested_tensor_from_jagged(values, offsets, max_seqlen=max(lengths) if cached else None)


def dense(x: torch.Tensor, width: int) -> torch.Tensor:
    """x's components (float64) as zero-padded rows of `width`."""
    values, bounds = x.values().double().cpu(), x.offsets().tolist()
    out = torch.zeros(len(bounds) - 1, width, *values.shape[1:], dtype=torch.float64)
    for b, (start, end) in enumerate(zip(bounds, bounds[1:])):
        out[b, :end - start] = values[start:end]
    return out


LENGTHS = [[5, 0, 17, 1, 9, 2, 13], [1], [4, 4, 3]]


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("cached", [False, True])
def test_jagged_dense_add_reads_zero_past_each_component(lengths, cached):
    x = nested(lengths, cached=cached)
    y = randn(len(lengths), max(lengths) + 3)
    check_kernel(jagged_dense_add_nested, (x, y), lambda x, y: y + dense(x, y.shape[1]))


@pytest.mark.parametrize("lengths,features", [(LENGTHS[0], 11), ([1], 1), ([6, 3], 33)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sums_over_the_ragged_dim_of_a_three_dim_nested_tensor(lengths, features, dtype):
    x = nested(lengths, features, dtype=dtype)
    check_kernel(ragged_sums, (x,), lambda x: dense(x, max(lengths)).sum(1),
                 rtol=1e-4 if dtype == torch.float32 else 2e-2, atol=1e-4 if dtype == torch.float32 else 2e-2)


@pytest.mark.parametrize("lengths", LENGTHS)
def test_a_grid_index_over_the_batch_reads_one_component(lengths):
    x = nested(lengths)
    check_kernel(padded, (x,), lambda x: dense(x, max(lengths)))


@pytest.mark.parametrize("lengths", LENGTHS)
def test_stores_into_a_nested_tensor_stop_at_each_component(lengths):
    x = nested(lengths)
    before = x.values().clone()
    result = scale_in_place(x, 2.5)
    assert result is x
    torch.testing.assert_close(x.values(), before * 2.5)


def test_a_rebound_call_reads_the_new_lengths():
    x, y = nested([3, 1]), randn(2, 9)
    torch.testing.assert_close(jagged_dense_add_nested(x, y).double().cpu(), y.double().cpu() + dense(x, 9))
    x, y = nested([2, 8]), randn(2, 9)  # same sizes of values and offsets, another longest component
    x.values().copy_(randn(10))
    torch.testing.assert_close(jagged_dense_add_nested(x, y).double().cpu(), y.double().cpu() + dense(x, 9))


def test_poisoned_values_past_the_last_offset_are_not_read():
    values = randn(9)
    offsets = torch.tensor([0, 4, 6]).to(values.device)
    poison_(values[6:])
    x = torch.nested.nested_tensor_from_jagged(values[:6], offsets)
    y = randn(2, 5)
    out = jagged_dense_add_nested(x, y)
    assert not out.isnan().any()
    torch.testing.assert_close(out.double().cpu(), y.double().cpu() + dense(x, 5))


@helion.kernel()
def whole_ragged_dim(x: torch.Tensor) -> torch.Tensor:
    batches = x.size(0)
    out = torch.empty([batches, 4], dtype=x.dtype, device=x.device)
    for tile_b in hl.tile(batches):
        out[tile_b, :] = x[tile_b, :]
    return out


@helion.kernel()
def batch_index_only(x: torch.Tensor) -> torch.Tensor:
    batches = x.size(0)
    out = torch.empty([batches], dtype=x.dtype, device=x.device)
    for tile_b in hl.tile(batches):
        out[tile_b] = x[tile_b]
    return out


@helion.kernel()
def sizes_in_device_code(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty([x.size(0)], dtype=x.dtype, device=x.device)
    for tile_b in hl.tile(x.size(0)):
        out[tile_b] = x[tile_b, 0]
    return out


@helion.kernel()
def through_another_name(x: torch.Tensor) -> torch.Tensor:
    batches, longest = x.size(0), x.size(1)
    other = x
    out = torch.empty([batches, longest], dtype=x.dtype, device=x.device)
    for tile_b, tile_j in hl.tile([batches, longest]):
        out[tile_b, tile_j] = other[tile_b, tile_j]
    return out


@pytest.mark.parametrize("kernel,message", [
    (through_another_name, "indexed through 'other'; index the kernel's argument by its own name"),
    (whole_ragged_dim, "ragged dim indexed by a slice or None; index it by a tile"),
    (batch_index_only, "indexed by fewer than two indices"),
    (sizes_in_device_code, "size of a NestedTensor argument in device code; read its sizes in host code"),
])
def test_unsupported_uses_say_what_is_supported(kernel, message):
    with pytest.raises(exc.NotSupported, match=message):
        kernel.bind((nested([2, 3]),))


def test_a_strided_nested_tensor_is_refused():
    x = torch.nested.nested_tensor([randn(2), randn(3)], layout=torch.strided)
    with pytest.raises(exc.NotSupported, match="torch.strided layout"):
        jagged_dense_add_nested.bind((x, randn(2, 3)))
