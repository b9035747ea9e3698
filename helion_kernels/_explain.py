"""`explain(fn, *args, **kwargs)`: which kernel, config, table and shape bucket a call would use."""
from __future__ import annotations

import torch

from . import nn
from ._backend import ORIGINAL
from ._ops import attention, matmul, rms_norm, softmax
from ._patch import _patched_softmax, is_patched
from ._plan import Explanation

_EXPLAINERS = {
    rms_norm.rms_norm: rms_norm.explain_rms_norm,
    rms_norm.rmsnorm: rms_norm.explain_rmsnorm,
    softmax.softmax: softmax.explain_softmax,
    _patched_softmax: softmax.explain_softmax,
    matmul.matmul: matmul.explain_matmul,
    matmul.linear: matmul.explain_linear,
    attention.scaled_dot_product_attention: attention.explain_scaled_dot_product_attention,
}
_BY_PYTORCH_NAME = {
    "rms_norm": rms_norm.explain_rms_norm,
    "softmax": softmax.explain_softmax,
    "linear": matmul.explain_linear,
    "scaled_dot_product_attention": attention.explain_scaled_dot_product_attention,
    "matmul": matmul.explain_matmul,
}
for _name, _function in ORIGINAL.items():
    _EXPLAINERS.setdefault(_function, _BY_PYTORCH_NAME[_name])


def explain(fn, *args, **kwargs) -> Explanation:
    """Describe, without running it, what `fn(*args, **kwargs)` would execute.

    `fn` is one of helion_kernels' functions, the torch function it replaces, or an RMSNorm module.
    Print the result for a readable report; its fields hold the dispatcher's decisions.
    """
    if isinstance(fn, torch.nn.RMSNorm):
        if not isinstance(fn, nn.RMSNorm) and not is_patched():
            return Explanation("torch.nn.RMSNorm", "a torch.nn.RMSNorm module runs PyTorch; "
                               "use helion_kernels.nn.RMSNorm or hk.patch()")
        (x,) = args
        return rms_norm.explain_rms_norm(x, fn.normalized_shape, fn.weight, fn.eps)
    explainer = _EXPLAINERS.get(fn)
    if explainer is None:
        raise TypeError(f"explain() does not know {fn!r}; pass a helion_kernels function "
                        "(rmsnorm, rms_norm, softmax, matmul, linear, scaled_dot_product_attention)")
    return explainer(*args, **kwargs)
