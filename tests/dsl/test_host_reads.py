"""Corpus: host values that follow the call beyond its tensors' shapes. Numbers read from tensors
in host code (`.item()`, `int(t)`, `float(t)`), as Helion's kernels count labels or lengths before
their loops: binding runs host code on meta tensors, where such a read has no value, so the launcher
reads it from the call's tensors and every call gets its own (a scale, a loop extent, an early
return). Tensors allocated from such a number or from an int argument are sized at run time, also
under static shapes and in block pointers and tensor descriptors, whose bounds were the bind's."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc
from build_tools.dsl.replayable import replayable

from ._harness import check_kernel, randint, randn


@helion.kernel()
def scaled_by_kept(x: torch.Tensor, labels: torch.Tensor, ignore: int = -100) -> torch.Tensor:
    kept = (labels != ignore).sum().item()
    if kept == 0:
        return torch.zeros_like(x)
    shift = float(labels.float().mean())
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] / kept + shift
    return out


def _scaled_by_kept(x, labels, ignore=-100):
    kept = int((labels != ignore).sum())
    return torch.zeros_like(x) if kept == 0 else x / kept + labels.double().mean()


@pytest.mark.parametrize("ignored", [0, 3, 7])
def test_a_count_read_from_a_tensor_scales_each_call(ignored, device):
    x = randn(7, 33, device=device)
    labels = randint(0, 50, 7, device=device)
    labels[:ignored] = -100
    check_kernel(scaled_by_kept, (x, labels), _scaled_by_kept)


def test_each_call_reads_its_own_values(device):
    x = randn(5, 9, device=device)
    bound = scaled_by_kept.bind((x, randint(0, 50, 5, device=device)))
    config = bound.config_spec.default_config()
    run = bound.compile_config(config)
    for ignored in (1, 4, 2):
        labels = randint(0, 50, 5, device=device)
        labels[:ignored] = -100
        expected = _scaled_by_kept(x.double(), labels.double()).cpu()
        torch.testing.assert_close(run(x, labels).double().cpu(), expected, rtol=1e-5, atol=1e-5)
    code = bound.to_triton_code(config)
    launcher = code[code.index("\ndef scaled_by_kept("):]
    assert ".item()" in launcher and not replayable(launcher)  # a device read: a CUDA graph would keep its value


@helion.kernel()
def leading_rows_doubled(x: torch.Tensor, rows_held: torch.Tensor) -> torch.Tensor:
    rows = int(rows_held)
    out = torch.empty([rows, x.size(1)], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([rows, x.size(1)]):
        out[tile_m, tile_n] = x[tile_m, tile_n] * 2
    return out


@pytest.mark.parametrize("rows", [1, 6, 11])
def test_a_read_value_bounds_a_loop_and_sizes_an_allocation(rows, device):
    x = randn(11, 37, device=device)
    check_kernel(leading_rows_doubled, (x, torch.tensor(rows, device=device)), lambda x, r: x[: int(r)] * 2)


def test_a_read_extent_gets_the_block_sizes_of_a_sizable_dimension(device):
    bound = leading_rows_doubled.bind((randn(11, 37, device=device), torch.tensor(3, device=device)))
    assert bound.config_spec.default_config()["block_sizes"][0] > 1


@helion.kernel()
def read_of_many(x: torch.Tensor) -> torch.Tensor:
    first = x.sum(0).item()
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] + first
    return out


def test_a_read_of_a_tensor_of_many_elements_is_refused(device):
    with pytest.raises(exc.NotSupported, match="5 elements cannot be converted"):
        read_of_many.bind((randn(3, 5, device=device),))


@helion.kernel()
def leading_rows_tripled(x: torch.Tensor, rows: int) -> torch.Tensor:
    out = torch.empty([rows, x.size(1)], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([rows, x.size(1)]):
        out[tile_m, tile_n] = x[tile_m, tile_n] * 3
    return out


@pytest.mark.parametrize("indexing", ["pointer", "block_ptr", "tensor_descriptor"])
def test_a_tensor_sized_from_an_int_argument_is_sized_at_run_time(indexing, device):
    x = randn(11, 37, device=device)
    bound = leading_rows_tripled.bind((x, 9))
    config = {**dict(bound.config_spec.default_config()), "indexing": [indexing] * 2, "block_sizes": [4, 8]}
    run = bound.compile_config(bound.config_spec.normalize(config))
    for rows in (9, 3, 11, 1):  # one compiled kernel: the int is an argument, not part of its key
        assert leading_rows_tripled.bind((x, rows)) is bound
        torch.testing.assert_close(run(x, rows), x[:rows] * 3, rtol=0, atol=0)


@helion.kernel()
def head_rows_plus_one(x: torch.Tensor, rows_held: torch.Tensor) -> torch.Tensor:
    head = x[: int(rows_held)]  # a view of an argument, sized by a read
    out = torch.empty_like(head)
    for tile_m, tile_n in hl.tile(head.size()):
        out[tile_m, tile_n] = head[tile_m, tile_n] + 1
    return out


@pytest.mark.parametrize("indexing", ["pointer", "block_ptr", "tensor_descriptor"])
def test_a_view_sized_by_a_read_is_sized_at_run_time(indexing, device):
    x = randn(13, 21, device=device)
    bound = head_rows_plus_one.bind((x, torch.tensor(5, device=device)))
    config = {**dict(bound.config_spec.default_config()), "indexing": [indexing] * 2, "block_sizes": [4, 8]}
    run = bound.compile_config(bound.config_spec.normalize(config))
    for rows in (5, 13, 2, 1):
        torch.testing.assert_close(run(x, torch.tensor(rows, device=device)), x[:rows] + 1, rtol=0, atol=0)
