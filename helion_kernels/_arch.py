"""Architecture keys of devices: `sm_90` for NVIDIA (compute capability), `gfx942` for AMD, `cpu`.

`HK_ARCH` (and optionally `HK_DEVICE_NAME`) override the detected values, which lets CPU runs under
TRITON_INTERPRET=1 exercise a GPU architecture's table.
"""
from __future__ import annotations

import os

import torch


def arch_key(device: torch.device) -> str:
    """Table key of the architecture that `device` belongs to."""
    forced = os.environ.get("HK_ARCH")
    if forced:
        return forced
    if device.type != "cuda":
        return device.type
    if torch.version.hip:
        name = getattr(torch.cuda.get_device_properties(device), "gcnArchName", "") or ""
        return name.split(":")[0] or "gfx"
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def device_name(device: torch.device) -> str | None:
    """Marketing name of the device (e.g. "NVIDIA H100 80GB HBM3"), used to refine a table choice."""
    forced = os.environ.get("HK_DEVICE_NAME")
    if forced:
        return forced
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_name(device)


def runs_backend(backend: str | list, device: torch.device) -> bool:
    """Whether kernels of a config `backend` (a name, or one per kernel) run on `device`. "gluon"
    kernels (warp-specialized, wgmma and TMA) need a CUDA device of compute capability 9.x, and
    Triton's interpreter cannot run them; "triton" kernels run wherever Triton does."""
    if "gluon" not in ([backend] if isinstance(backend, str) else backend):
        return True
    return device.type == "cuda" and not torch.version.hip and os.environ.get("TRITON_INTERPRET") != "1" \
        and torch.cuda.get_device_capability(device)[0] == 9
