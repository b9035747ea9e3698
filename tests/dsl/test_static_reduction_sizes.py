"""static_reduction_sizes: with run-time sizes, the config knob passes each reduction dim's extent
to the kernel as a constexpr instead of a run-time argument. One generated source serves every
width; Triton compiles it once per distinct width. Results must match float64 references at every
width the same compiled config meets, held whole or looped in chunks."""
import re

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import compare, poisoned_allocations, randn


@helion.kernel(static_shapes=False)
def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(m):
        row = x[tile, :].to(torch.float32)
        mean_square = (row * row).sum(dim=-1, keepdim=True) / n
        out[tile, :] = (row * torch.rsqrt(mean_square + 1e-6)).to(out.dtype)
    return out


@helion.kernel(static_shapes=True)
def normalize_rows_static(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        row = x[tile, :]
        out[tile, :] = row - row.sum(dim=-1, keepdim=True)
    return out


def _reference(x: torch.Tensor) -> torch.Tensor:
    row = x.double()
    return row * torch.rsqrt((row * row).mean(-1, keepdim=True) + 1e-6)


def _signature(source: str) -> str:
    return re.search(r"def _normalize_rows_kernel_\w+\((.*)\):", source).group(1)


@pytest.mark.parametrize("chunk", [None, 64])
def test_reduction_extent_is_a_constexpr_and_every_width_is_right(chunk, device):
    bound = normalize_rows.bind((randn(5, 300, device=device),))
    spec = bound.config_spec
    assert next(k.choices for k in spec.knobs() if k.name == "static_reduction_sizes") == (False, True)
    plain = spec.normalize({"reduction_loops": [chunk], "block_sizes": [2]})
    static = spec.normalize({"reduction_loops": [chunk], "block_sizes": [2], "static_reduction_sizes": True})
    assert plain.static_reduction_sizes is False and static.static_reduction_sizes is True
    plain_params = _signature(bound.to_triton_code(plain)).split(", ")
    static_params = _signature(bound.to_triton_code(static)).split(", ")
    made_constant = [p for p in plain_params if f"{p}: tl.constexpr" in static_params]
    assert len(made_constant) == 1 and "size" in made_constant[0], (plain_params, static_params)
    kernel = bound.compile_config(static)
    for m, n in ((5, 300), (3, 1), (7, 37), (2, 1000), (1, 64)):
        x = randn(m, n, device=device)
        with poisoned_allocations():
            out = kernel(x)
        compare(out, _reference(x), label=f"{m}x{n} chunk {chunk}")


def test_knob_is_off_without_a_run_time_reduction_extent(device):
    bound = normalize_rows_static.bind((randn(4, 33, device=device),))
    spec = bound.config_spec
    assert "static_reduction_sizes" not in {k.name for k in spec.knobs()}
    config = spec.normalize({"static_reduction_sizes": True})
    assert config.static_reduction_sizes is False
    x = randn(4, 33, device=device)
    compare(bound.compile_config(config)(x), x.double() - x.double().sum(-1, keepdim=True))
