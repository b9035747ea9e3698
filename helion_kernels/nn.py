"""Drop-in modules: `helion_kernels.nn.RMSNorm` is torch.nn.RMSNorm running our kernel."""
from __future__ import annotations

import torch

from ._ops.rms_norm import rms_norm


class RMSNorm(torch.nn.RMSNorm):
    """torch.nn.RMSNorm with the same constructor, parameters and state_dict keys."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)
