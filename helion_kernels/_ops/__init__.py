"""The ops: torch.library custom ops over the generated kernels, plus the PyTorch-compatible wrappers."""
