"""Softmax: custom ops `helion_kernels::softmax_fwd/bwd` and the `softmax` wrapper.

`softmax(x, dtype=torch.float32)` on half rows (autocast's softmax on CUDA) is one kernel reading the
half rows and writing float32 (the cast is exact, so this is PyTorch's result), and its backward
one kernel reading float32 y and dy and writing the half gradient: each keyed by its input dtype
with the output dtype argument's beside it (the tuned configs generated for those outputs)."""
from __future__ import annotations

import torch
from torch import Tensor

from .. import _autocast, _direct, _eager
from .._backend import HALF_DTYPES, ORIGINAL, device_reason, dtype_reason, needs_autograd, transform_reason
from .._plan import KernelCall, chosen_launcher, explanation, launch, other_dtypes

SHAPE_KEYS = ("M", "N")


def _fwd_dtypes(dtype: torch.dtype, out_dtype: torch.dtype) -> tuple:
    return other_dtypes(dtype, out_dtype=out_dtype)


def _bwd_dtypes(dtype: torch.dtype, grad_in_dtype: torch.dtype) -> tuple:
    return other_dtypes(dtype, grad_in_dtype=grad_in_dtype)


def _call(op: str, rows: Tensor, dtype: torch.dtype, dtypes: tuple) -> KernelCall:
    """The launch of `op` on rows of `rows`'s shape read in `dtype`, other argument dtypes `dtypes`."""
    return KernelCall(op, rows.device, dtype, SHAPE_KEYS, tuple(rows.shape), dtypes)


def _torch_fwd(x: Tensor, out_dtype: torch.dtype) -> Tensor:
    return torch.softmax(x, dim=-1, dtype=torch.float32).to(out_dtype)


def _torch_bwd(grad_out: Tensor, y: Tensor, grad_in_dtype: torch.dtype) -> Tensor:
    y32 = y.float()
    grad = grad_out.float()
    return (y32 * (grad - (grad * y32).sum(-1, keepdim=True))).to(grad_in_dtype)


def _forward(x: Tensor, out_dtype: torch.dtype) -> Tensor:
    return launch("softmax_fwd", SHAPE_KEYS, x.shape, x, (x, out_dtype), _torch_fwd, _fwd_dtypes(x.dtype, out_dtype))


def _fwd_impl(x: Tensor, out_dtype: torch.dtype) -> Tensor:
    """Softmax over the last dim of a 2-D tensor, written in `out_dtype` (x's dtype or float32)."""
    if device_reason(x.device) is not None:
        return _torch_fwd(x, out_dtype)
    return _forward(x, out_dtype)


softmax_fwd = torch.library.custom_op("helion_kernels::softmax_fwd", _fwd_impl, mutates_args=())


@softmax_fwd.register_fake
def _(x, out_dtype):
    return torch.empty_like(x, dtype=out_dtype)


def _bwd_impl(grad_out: Tensor, y: Tensor, grad_in_dtype: torch.dtype) -> Tensor:
    """Gradient of softmax_fwd given its output y, written in `grad_in_dtype` (the input's dtype)."""
    args = (grad_out.contiguous(), y, grad_in_dtype)
    if device_reason(y.device) is not None:
        return _torch_bwd(*args)
    return launch("softmax_bwd", SHAPE_KEYS, y.shape, y, args, _torch_bwd, _bwd_dtypes(y.dtype, grad_in_dtype))


softmax_bwd = torch.library.custom_op("helion_kernels::softmax_bwd", _bwd_impl, mutates_args=())


@softmax_bwd.register_fake
def _(grad_out, y, grad_in_dtype):
    return torch.empty_like(y, dtype=grad_in_dtype)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.input_dtype = inputs[0].dtype


def _autograd_backward(ctx, grad_out):
    (y,) = ctx.saved_tensors
    if _eager.records_grad(grad_out, y):  # create_graph: PyTorch ops, whose gradient autograd takes again
        return _torch_bwd(grad_out, y, ctx.input_dtype), None
    return _eager.call(softmax_bwd, _bwd_impl, grad_out, y, ctx.input_dtype), None


softmax_fwd.register_autograd(_autograd_backward, setup_context=_setup_context)
_SoftmaxFunction = _eager.autograd_function("SoftmaxFunction", _fwd_impl, _setup_context, _autograd_backward)


def fallback_reason(input, dim, dtype) -> str | None:
    """Why this call runs PyTorch's softmax instead of our kernel, or None."""
    if not isinstance(input, Tensor):
        return "input is not a tensor (PyTorch reports the error)"
    if not isinstance(dim, int) or isinstance(dim, bool):
        return "dim is not an int (implicit-dim softmax is PyTorch's legacy behaviour)"
    if input.dim() == 0 or not -input.dim() <= dim < input.dim():
        return "dim out of range or 0-d input (PyTorch reports the error or handles the scalar)"
    if dtype is not None and not isinstance(dtype, torch.dtype):
        return "dtype is not a torch.dtype (PyTorch reports the error)"
    if input.numel() == 0:
        return "empty tensor"
    return dtype_reason(dtype or input.dtype) or device_reason(input.device) or transform_reason()


def _as_rows(input: Tensor, dim: int, dtype):
    """(input, cast to dtype unless the kernel reads it as it is, with `dim` moved last; its 2-D
    rows; the output dtype). Half rows with dtype float32 are read as they are (the cast is exact);
    no copy for a 2-D last-dim call."""
    x = input
    if dtype is not None and not (dtype == torch.float32 and input.dtype in HALF_DTYPES):
        x = input.to(dtype)
    if dim not in (-1, x.dim() - 1):
        x = x.movedim(dim, -1)
    return x, (x if x.dim() == 2 else x.reshape(-1, x.shape[-1])), dtype or x.dtype


def _plan(launcher, rows: int | None, out_dtype: torch.dtype):
    """The direct call of one key (no cast, last dim, output of `out_dtype`); `rows` is N when the
    input is viewed as [-1, N]."""
    if rows is None:
        return lambda input: launcher(input, out_dtype)
    return lambda input: launcher(input.reshape(-1, rows), out_dtype).view(input.shape)


def _autocast_dtype(input, dtype):
    """`dtype`, or float32 where an open autocast region sets it (CUDA's policy for softmax: float32
    unless a dtype is given)."""
    if (_autocast.enabled() and dtype is None and _autocast.applies("softmax", input)
            and _autocast.eligible(input, input.device.type)):
        return torch.float32
    return dtype


def softmax(input: Tensor, dim: int = -1, _stacklevel: int = 3, dtype: torch.dtype | None = None) -> Tensor:
    """Same as torch.nn.functional.softmax, whose positional arguments it takes (`_stacklevel` only
    matters to PyTorch's warning about an implicit dim), but dim defaults to the last dimension."""
    dtype = _autocast_dtype(input, dtype)
    tag = (softmax, dim, dtype)
    if not _direct._is_compiling():
        out = _direct.replay(tag, input)
        if out is not _direct.MISSING:
            return out
    key = _direct.key(tag, input)
    if key is not None:
        out = _direct.run(key, input)
        if out is not _direct.MISSING:
            return out
    if fallback_reason(input, dim, dtype) is not None:
        return ORIGINAL["softmax"](input, dim, dtype=dtype)
    x, rows, out_dtype = _as_rows(input, dim, dtype)
    if key is None:
        out = _eager.apply(softmax_fwd, _SoftmaxFunction, rows, out_dtype)
    else:
        out = _forward(rows, out_dtype)
        launcher = chosen_launcher("softmax_fwd", rows.shape, rows, _fwd_dtypes(rows.dtype, out_dtype))
        if launcher is not None and x is input:
            _direct.store(key, _plan(launcher, None if rows is x else rows.shape[1], out_dtype), launcher)
    if rows is not x:
        out = out.view(x.shape)
    if dim in (-1, input.dim() - 1):
        return out
    return out.movedim(-1, dim).contiguous()


def explain_softmax(input, dim=-1, _stacklevel=3, dtype=None):
    dtype = _autocast_dtype(input, dtype)
    reason = fallback_reason(input, dim, dtype)
    if reason is not None:
        return explanation("softmax", reason)
    _, rows, out_dtype = _as_rows(input, dim, dtype)
    backward = [_call("softmax_bwd", rows, out_dtype, _bwd_dtypes(out_dtype, rows.dtype))] if needs_autograd(input) else []
    return explanation("softmax", None, [_call("softmax_fwd", rows, rows.dtype, _fwd_dtypes(rows.dtype, out_dtype))], backward)
