"""Architecture keys: sm_{major}{minor} for NVIDIA, gfx name for AMD, overrides for tests."""
import types

import torch

from helion_kernels import _arch

CUDA0 = torch.device("cuda", 0)


def test_nvidia_capability(monkeypatch):
    monkeypatch.delenv("HK_ARCH", raising=False)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert _arch.arch_key(CUDA0) == "sm_90"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 6))
    assert _arch.arch_key(CUDA0) == "sm_86"


def test_amd_gfx_name(monkeypatch):
    monkeypatch.delenv("HK_ARCH", raising=False)
    monkeypatch.setattr(torch.version, "hip", "6.2")
    props = types.SimpleNamespace(gcnArchName="gfx942:sramecc+:xnack-")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    assert _arch.arch_key(CUDA0) == "gfx942"


def test_cpu_and_override(monkeypatch):
    monkeypatch.delenv("HK_ARCH", raising=False)
    assert _arch.arch_key(torch.device("cpu")) == "cpu"
    assert _arch.device_name(torch.device("cpu")) is None
    monkeypatch.setenv("HK_ARCH", "sm_80")
    monkeypatch.setenv("HK_DEVICE_NAME", "NVIDIA A100")
    assert _arch.arch_key(torch.device("cpu")) == "sm_80"
    assert _arch.device_name(torch.device("cpu")) == "NVIDIA A100"


def test_float32_products_on_cuda_follow_allow_tf32(monkeypatch):
    from helion_kernels._backend import device_reason

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    assert "allow_tf32" in device_reason(CUDA0, torch.float32, uses_dot=True)
    assert device_reason(CUDA0, torch.float32, uses_dot=False) is None
    assert device_reason(CUDA0, torch.bfloat16, uses_dot=True) is None
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    assert device_reason(CUDA0, torch.float32, uses_dot=True) is None
