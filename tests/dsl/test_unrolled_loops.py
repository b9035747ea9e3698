"""Corpus: loops unrolled at compile time, as Helion writes them: `hl.static_range`, loops over a
tuple or list of tensors, `zip` and `enumerate` of them, a static branch on the loop's item, a
device loop inside an unrolled one (its accumulator carried from copy to copy), and the errors for
loops the compile cannot unroll."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc

from ._harness import check_kernel, randn


@helion.kernel()
def weighted_by_static_ranges(x: torch.Tensor) -> torch.Tensor:
    """x * (0 + 1 + 2) + x * (2 + 4 + 6) - x * 10, the first copy of the last loop scaling by 3."""
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        acc = torch.zeros_like(x[tile])
        for i in hl.static_range(3):
            acc += x[tile] * i
        for i in hl.static_range(2, 8, step=2):
            acc = acc + x[tile] * i
        for i in hl.static_range(10, 0, -5):
            acc -= x[tile] * (3 if i == 10 else 1)
        out[tile] = acc
    return out


@pytest.mark.parametrize("n", [1, 77])
def test_static_range_loops_unroll(n, device):
    check_kernel(weighted_by_static_ranges, (randn(n, device=device),), lambda x: x * 11.0)


@helion.kernel()
def blend(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """1 * a + 2 * b + 3 * c, the tensors taken from a tuple by enumerate, then each scaled by
    its weight from a zip of lists."""
    out = torch.empty_like(a)
    for tile in hl.tile(a.size(0)):
        total = hl.zeros([tile], dtype=torch.float32)
        for k, t in enumerate((a, b, c), 1):
            total = total + t[tile] * k
        for w, t in zip([0.5, -1.0], [a, c]):
            total = total + t[tile] * w
        out[tile] = total
    return out


@pytest.mark.parametrize("n", [1, 50])
def test_loops_over_tuples_zip_and_enumerate(n, device):
    a, b, c = (randn(n, device=device) for _ in range(3))
    check_kernel(blend, (a, b, c), lambda a, b, c: 1.5 * a + 2 * b + 2 * c)


@helion.kernel()
def passes_of_row_sums(x: torch.Tensor) -> torch.Tensor:
    """sum_j x[i, j] * (1 + 2): a tile loop over the columns inside each of two unrolled copies,
    its accumulator carried from the first copy into the second."""
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for scale in hl.static_range(1, 3):
            for tile_n in hl.tile(n):
                acc = acc + x[tile_m, tile_n].sum(-1) * scale
        out[tile_m] = acc
    return out


@pytest.mark.parametrize("m,n", [(1, 1), (5, 70)])
def test_device_loop_inside_an_unrolled_loop(m, n, device):
    x = randn(m, n, device=device)
    check_kernel(passes_of_row_sums, (x,), lambda x: x.sum(-1) * 3.0, atol=1e-4)
    config = passes_of_row_sums.bind((x,)).config_spec.default_config()
    assert len(config.block_sizes) == 2 and len(config.range_unroll_factors) == 1  # one site, as in Helion


@helion.kernel(static_shapes=False)
def static_range_of_a_size(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    for tile in hl.tile(x.size(0)):
        for i in hl.static_range(x.size(0)):
            out[tile] += x[tile]
    return out


@helion.kernel()
def loop_over_a_tile_value(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    for tile in hl.tile(x.size(0)):
        for v in x[tile]:
            out[tile] += v
    return out


@helion.kernel()
def python_range_loop(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    for tile in hl.tile(x.size(0)):
        for i in range(2):
            out[tile] += x[tile]
    return out


@pytest.mark.parametrize("kernel,message", [
    (static_range_of_a_size, "hl.static_range takes integers known at compile time, not HostScalar"),
    (loop_over_a_tile_value, "device loops iterate over hl.tile\\(...\\), hl.grid\\(...\\), hl.static_range\\(...\\) "
     "or a tuple or list, not TVal"),
    (python_range_loop, "hl.static_range for a loop unrolled at compile time"),
])
def test_loops_that_cannot_unroll_say_why(kernel, message):
    x = randn(6)
    with pytest.raises(exc.NotSupported, match=message):
        kernel.bind((x,)).to_triton_code(kernel.bind((x,)).config_spec.default_config())
