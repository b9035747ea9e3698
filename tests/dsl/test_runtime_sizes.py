"""static_shapes=False: host integers computed from sizes are never baked at the value of the first
bind. Sizes in device allocations stay run-time values; a value that Triton needs as a constant (a
block size, the equality of two sizes unified into one dimension) joins the specialization, so a
later call of the same size bucket with another value binds and compiles its own kernel."""
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import compare, randn


@helion.kernel(static_shapes=False)
def column_sums(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([n], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m, block_size=4):
        acc = hl.zeros([n], dtype=torch.float32)
        acc = acc + torch.sum(x[tile_m, :], dim=0)
        out[:] = acc
    return out


def test_allocation_size_list_is_a_runtime_size(device):
    for n in (300, 500, 77):
        x = randn(4, n, device=device)
        compare(column_sums(x), x.double().sum(0))


@helion.kernel(static_shapes=False)
def part_sums(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    chunk = helion.next_power_of_2(helion.cdiv(n, 4))
    out = torch.zeros([4], dtype=torch.float32, device=x.device)
    for part in hl.tile([n], block_size=[chunk]):
        total = hl.zeros([part], dtype=torch.float32).sum()
        for tile in hl.tile(part.begin, part.end, block_size=8):
            total = total + x[tile].sum()
        out[part.id] = total
    return out


@helion.kernel(static_shapes=False)
def part_sums_bare(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    chunk = helion.next_power_of_2(helion.cdiv(n, 4))
    out = torch.zeros([4], dtype=torch.float32, device=x.device)
    for part in hl.tile(n, block_size=chunk):
        total = hl.zeros([part], dtype=torch.float32).sum()
        for tile in hl.tile(part.begin, part.end, block_size=8):
            total = total + x[tile].sum()
        out[part.id] = total
    return out


def expected_part_sums(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    chunk = helion.next_power_of_2(helion.cdiv(n, 4))
    out = torch.zeros(4, dtype=torch.float64)
    for i, start in enumerate(range(0, n, chunk)):
        out[i] = x.double().cpu()[start:start + chunk].sum()
    return out


def test_host_block_size_joins_the_specialization(device):
    for kernel in (part_sums, part_sums_bare):
        sizes = (64, 300, 1000)
        bounds = set()
        for n in sizes:
            x = randn(n, device=device)
            compare(kernel(x), expected_part_sums(x), label=f"{kernel.name} n={n}")
            bounds.add(id(kernel.bind((x,))))
        assert len(bounds) == len(sizes)
        key = kernel.bind((randn(64, device=device),)).specialization_key()
        assert key["specialized"] == [16]


@helion.kernel(static_shapes=False)
def two_row_sums(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty([a.size(0)], dtype=torch.float32, device=a.device)
    for tile in hl.tile(a.size(0)):
        out[tile] = a[tile, :].sum(-1) + b[tile, :].sum(-1)
    return out


def test_equal_sizes_sharing_a_dimension_are_guarded(device):
    for n_a, n_b in ((300, 300), (300, 500), (500, 300), (77, 77)):
        a, b = randn(6, n_a, device=device), randn(6, n_b, device=device)
        compare(two_row_sums(a, b), a.double().sum(-1) + b.double().sum(-1), label=f"{n_a}x{n_b}")
    key = two_row_sums.bind((randn(6, 9, device=device), randn(6, 9, device=device))).specialization_key()
    assert "specialized" not in key


@helion.kernel(static_shapes=False, config=helion.Config(block_sizes=[32], indexing=["block_ptr", "block_ptr"]))
def scale_into_prefix(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    for tile in hl.tile(x.size(0)):
        y[tile] = x[tile] * 2.0
    return y


def test_block_indexing_bounds_are_guarded(device):
    """Block pointers bound a tile by the tensor's size, which equals the tile's end only at bind."""
    for n_y in (100, 150, 100):
        x, y = randn(100, device=device), randn(n_y, device=device)
        expected = y.double().clone()
        expected[:100] = x.double() * 2.0
        compare(scale_into_prefix(x, y.clone()), expected, label=f"y of {n_y}")
