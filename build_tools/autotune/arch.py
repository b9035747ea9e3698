"""Architecture key and device name of the machine the tuner runs on (same keys as the runtime)."""
from __future__ import annotations


def detect_arch(device: str = "cuda") -> str:
    """`sm_{major}{minor}` on NVIDIA, the `gfx...` name on AMD, "cpu" for the interpreter."""
    if not device.startswith("cuda"):
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("--arch auto needs a GPU; none is visible")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if getattr(torch.version, "hip", None):
        return props.gcnArchName.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def device_name(device: str = "cuda") -> str:
    if not device.startswith("cuda"):
        return "cpu (Triton interpreter)"
    import torch

    return torch.cuda.get_device_name(torch.cuda.current_device())
