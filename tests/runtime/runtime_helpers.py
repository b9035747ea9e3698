"""Helpers of the runtime tests: float64 references, tolerances, fresh random inputs."""
import torch

TOLERANCE = {torch.float32: (2e-4, 2e-5), torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2),
             torch.float64: (1e-10, 1e-12)}


def randn(*shape, dtype=torch.float32, device="cpu", requires_grad=False, seed=None):
    """Fresh normal samples (never zeros), drawn in float32 then cast."""
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    t = torch.randn(*shape, generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)
    return t.requires_grad_(requires_grad)


def double_leaf(t):
    """A float64 leaf copy of `t` (keeping requires_grad) for the higher-precision reference."""
    return t.detach().double().requires_grad_(t.requires_grad)


def assert_close(actual, expected, dtype):
    rtol, atol = TOLERANCE[dtype]
    assert actual.dtype == dtype, (actual.dtype, dtype)
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected.double(), rtol=rtol, atol=atol)


def grads(output, inputs, grad_output):
    return torch.autograd.grad(output, [t for t in inputs if t is not None], grad_output)


def uses_kernels_here(device, dtype=None, uses_dot=False) -> bool:
    """Whether the generated Triton runs for these tensors: on CUDA (float32 products only when PyTorch
    allows TF32), or on CPU under TRITON_INTERPRET=1 (the tests' default; helion_kernels._interpreter
    corrects the interpreter's bfloat16 tl.dot)."""
    import os

    if device == "cuda":
        return not (uses_dot and dtype == torch.float32) or torch.backends.cuda.matmul.allow_tf32
    return os.environ.get("TRITON_INTERPRET") == "1"
