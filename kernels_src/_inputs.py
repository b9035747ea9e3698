"""Seeded random input helpers shared by the op modules' `make_inputs` (fresh data per seed, never zeros)."""
from __future__ import annotations

import torch


def seeded_generator(device: str, seed: int) -> torch.Generator | None:
    """A generator on `device` seeded with `seed`, so every call draws a reproducible fresh sample;
    None on the meta device, whose inputs have shapes and dtypes only (binding a kernel to an
    entry's shape without drawing, or computing a reference from, its data)."""
    if torch.device(device).type == "meta":
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def randn(shape, dtype: torch.dtype, device: str, generator: torch.Generator, scale: float = 1.0,
          shift: float = 0.0) -> torch.Tensor:
    """Normal samples drawn in float32 on `device`, scaled and shifted, then cast to `dtype`."""
    values = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
    return (values * scale + shift).to(dtype)


def as_float64(value):
    """Cast a tensor (or a tuple/list of tensors) to float64 for higher-precision references."""
    if isinstance(value, (tuple, list)):
        return type(value)(as_float64(item) for item in value)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch.float64)
    return value


def element_size(dtype: torch.dtype) -> int:
    """Bytes per element of `dtype`."""
    return torch.empty((), dtype=dtype).element_size()
