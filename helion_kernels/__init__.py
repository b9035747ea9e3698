"""helion_kernels: precompiled, autotuned Triton kernels behind PyTorch-compatible functions.

    import helion_kernels as hk
    y = hk.rmsnorm(x, weight)          # or hk.rms_norm / softmax / matmul / linear /
                                       # scaled_dot_product_attention, hk.nn.RMSNorm
    print(hk.explain(hk.softmax, x))   # which kernel, config and table would run
"""
from . import _interpreter  # noqa: F401  (fixes Triton's CPU interpreter when it is on)
from . import nn
from ._explain import explain
from ._ops.attention import scaled_dot_product_attention
from ._ops.matmul import linear, matmul
from ._ops.rms_norm import rms_norm, rmsnorm
from ._ops.softmax import softmax
from ._patch import patch, unpatch

__version__ = "0.1.0"

__all__ = ["explain", "linear", "matmul", "nn", "patch", "rms_norm", "rmsnorm",
           "scaled_dot_product_attention", "softmax", "unpatch", "__version__"]
