"""RMSNorm: custom ops `helion_kernels::rms_norm_fwd/bwd` and the `rms_norm`/`rmsnorm` wrappers.

A weight of another dtype than the rows (float32 master weights beside bf16 rows) is read as it is,
as PyTorch's rms_norm does (float32 math, one rounding to the rows' dtype). Under CUDA autocast,
whose rms_norm casts its arguments to float32, half rows are read as they are by one kernel writing
float32 (the casts are exact, so the result is PyTorch's), and its backward reads the float32
gradient beside the half rows and writes the half gradient: each keyed by the rows' dtype with the
other arguments' dtypes beside it (the tuned configs generated for them: OpSpec.dtype_variants)."""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .. import _autocast, _direct, _eager
from .._backend import HALF_DTYPES, ORIGINAL, device_reason, dtype_reason, needs_autograd, transform_reason
from .._plan import KernelCall, chosen_launcher, explanation, launch, other_dtypes

SHAPE_KEYS = ("M", "N")


def _dtype_of(t: Tensor | None) -> torch.dtype | None:
    return None if t is None else t.dtype


def _fwd_dtypes(x: Tensor, weight: Tensor | None, out_dtype: torch.dtype) -> tuple:
    return other_dtypes(x.dtype, weight=_dtype_of(weight), out_dtype=out_dtype)


def _bwd_dtypes(grad_dtype: torch.dtype, x: Tensor, weight: Tensor | None) -> tuple:
    return other_dtypes(x.dtype, grad_out=grad_dtype, weight=_dtype_of(weight))


def _call(op: str, x: Tensor, dtypes: tuple) -> KernelCall:
    return KernelCall(op, x.device, x.dtype, SHAPE_KEYS, tuple(x.shape), dtypes)


def _torch_fwd(x: Tensor, weight: Tensor | None, eps: float, out_dtype: torch.dtype):
    xf = x.float()
    inv_rms = torch.rsqrt(xf.square().mean(-1) + eps)
    out = xf * inv_rms[:, None]
    if weight is not None:
        out = out * weight.float()
    return out.to(out_dtype), inv_rms


def _torch_bwd(grad_out: Tensor, x: Tensor, weight: Tensor | None, inv_rms: Tensor):
    x_hat = x.float() * inv_rms[:, None]
    grad = grad_out.float()
    grad_w = grad * weight.float() if weight is not None else grad
    dx = inv_rms[:, None] * (grad_w - x_hat * (grad_w * x_hat).mean(-1, keepdim=True))
    dw = (grad * x_hat).sum(0) if weight is not None else x.new_empty(0, dtype=torch.float32)
    return dx.to(x.dtype), dw.to(weight.dtype) if weight is not None else dw


def _torch_noweight_fwd(x: Tensor, eps: float, out_dtype: torch.dtype):
    return _torch_fwd(x, None, eps, out_dtype)


def _torch_noweight_bwd(grad_out: Tensor, x: Tensor, inv_rms: Tensor) -> Tensor:
    return _torch_bwd(grad_out, x, None, inv_rms)[0]


def _float(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.float()


def _float32_fwd(x: Tensor, weight: Tensor | None, eps: float, out_dtype: torch.dtype):
    """A mixed-dtype forward whose variant does not run here (none generated, or its config does not
    fit the device): the float32 kernels on float32 copies and a cast of the output, as before dtype
    variants, rather than PyTorch's unfused ops."""
    out, inv_rms = _forward(x.float(), _float(weight), eps, torch.float32)
    return out.to(out_dtype), inv_rms


def _float32_noweight_fwd(x: Tensor, eps: float, out_dtype: torch.dtype):
    return _float32_fwd(x, None, eps, out_dtype)


def _float32_bwd(grad_out: Tensor, x: Tensor, weight: Tensor | None, inv_rms: Tensor):
    """The backward's counterpart of `_float32_fwd`: gradients cast to x's and the weight's dtypes."""
    dx, dw = _backward(grad_out.float(), x.float(), _float(weight), inv_rms)
    return dx.to(x.dtype), (dw.to(weight.dtype) if weight is not None else dw)


def _float32_noweight_bwd(grad_out: Tensor, x: Tensor, inv_rms: Tensor) -> Tensor:
    return _float32_bwd(grad_out, x, None, inv_rms)[0]


def _forward(x: Tensor, weight: Tensor | None, eps: float, out_dtype: torch.dtype):
    dtypes = _fwd_dtypes(x, weight, out_dtype)
    if weight is None:
        fallback = _float32_noweight_fwd if dtypes else _torch_noweight_fwd
        return launch("rms_norm_noweight_fwd", SHAPE_KEYS, x.shape, x, (x, eps, out_dtype), fallback, dtypes)
    fallback = _float32_fwd if dtypes else _torch_fwd
    return launch("rms_norm_fwd", SHAPE_KEYS, x.shape, x, (x, weight, eps, out_dtype), fallback, dtypes)


def _backward(grad_out: Tensor, x: Tensor, weight: Tensor | None, inv_rms: Tensor):
    dtypes = _bwd_dtypes(grad_out.dtype, x, weight)
    if weight is None:
        fallback = _float32_noweight_bwd if dtypes else _torch_noweight_bwd
        dx = launch("rms_norm_noweight_bwd", SHAPE_KEYS, x.shape, x, (grad_out, x, inv_rms), fallback, dtypes)
        return dx, x.new_empty(0, dtype=torch.float32)
    fallback = _float32_bwd if dtypes else _torch_bwd
    return launch("rms_norm_bwd", SHAPE_KEYS, x.shape, x, (grad_out, x, weight, inv_rms), fallback, dtypes)


def _fwd_impl(x: Tensor, weight: Tensor | None, eps: float, out_dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """RMSNorm over the last dim of a 2-D tensor; returns (out in `out_dtype`, inv_rms in float32)."""
    if device_reason(x.device) is not None:
        return _torch_fwd(x, weight, eps, out_dtype)
    return _forward(x, weight, eps, out_dtype)


rms_norm_fwd = torch.library.custom_op("helion_kernels::rms_norm_fwd", _fwd_impl, mutates_args=())


@rms_norm_fwd.register_fake
def _(x, weight, eps, out_dtype):
    return x.new_empty(x.shape, dtype=out_dtype), x.new_empty(x.shape[0], dtype=torch.float32)


def _bwd_impl(grad_out: Tensor, x: Tensor, weight: Tensor | None, inv_rms: Tensor) -> tuple[Tensor, Tensor]:
    """Gradients (dx in x's dtype, dweight in the weight's) of rms_norm_fwd; dweight is empty when
    there is no weight."""
    if device_reason(x.device) is not None:
        return _torch_bwd(grad_out.contiguous(), x, weight, inv_rms)
    return _backward(grad_out.contiguous(), x, weight, inv_rms)


rms_norm_bwd = torch.library.custom_op("helion_kernels::rms_norm_bwd", _bwd_impl, mutates_args=())


@rms_norm_bwd.register_fake
def _(grad_out, x, weight, inv_rms):
    dw = torch.empty_like(weight) if weight is not None else x.new_empty(0, dtype=torch.float32)
    return torch.empty_like(x), dw


def _setup_context(ctx, inputs, output):
    """inv_rms is not differentiable; unmaterialized grads skip a zero-filled grad for it (an
    allocation and a fill per backward)."""
    x, weight, eps, _out_dtype = inputs
    ctx.save_for_backward(x, weight, output[1])
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    ctx.eps = eps


def _autograd_backward(ctx, grad_out, _grad_inv_rms):
    if grad_out is None:
        return None, None, None, None
    x, weight, inv_rms = ctx.saved_tensors
    if _eager.records_grad(grad_out, x, weight):
        # create_graph: PyTorch ops, whose gradient autograd takes again; inv_rms is computed again
        # from x (the saved one is not differentiable)
        dx, dw = _torch_bwd(grad_out, x, weight, torch.rsqrt(x.float().square().mean(-1) + ctx.eps))
    else:
        dx, dw = _eager.call(rms_norm_bwd, _bwd_impl, grad_out, x, weight, inv_rms)
    return dx, (dw if weight is not None and ctx.needs_input_grad[1] else None), None, None


rms_norm_fwd.register_autograd(_autograd_backward, setup_context=_setup_context)
_RmsNormFunction = _eager.autograd_function("RmsNormFunction", _fwd_impl, _setup_context, _autograd_backward)


def _normalized_dims(normalized_shape) -> tuple | None:
    """The dims as a tuple, or None where PyTorch refuses the argument (an int among them: it
    takes only a sequence of ints)."""
    if isinstance(normalized_shape, torch.Size):
        return normalized_shape
    try:
        return tuple(int(n) for n in normalized_shape)
    except (TypeError, ValueError):
        return None


def fallback_reason(input, normalized_shape, weight) -> str | None:
    """Why this call runs PyTorch's rms_norm instead of our kernel, or None."""
    if not isinstance(input, Tensor) or (weight is not None and not isinstance(weight, Tensor)):
        return "arguments are not tensors (PyTorch reports the error)"
    dims = _normalized_dims(normalized_shape)
    shape = input.shape
    if not dims or len(dims) > len(shape) or shape[len(shape) - len(dims):] != dims:
        return "normalized_shape does not match the input's trailing dims (PyTorch reports the error)"
    if weight is not None:
        if weight.shape != dims:
            return "weight shape differs from normalized_shape (PyTorch reports the error)"
        if weight.device != input.device:
            return "weight device differs from the input's"
    if input.numel() == 0:
        return "empty tensor"
    return (dtype_reason(input.dtype) or (weight is not None and dtype_reason(weight.dtype))
            or device_reason(input.device) or transform_reason())


def _as_rows(input: Tensor, normalized_shape, weight: Tensor | None):
    """2-D rows view of the input and a 1-D weight (no copy for a 2-D input)."""
    if input.dim() == 2 and len(normalized_shape) == 1:
        return input, weight
    n = math.prod(_normalized_dims(normalized_shape))
    return input.reshape(-1, n), (weight.reshape(n) if weight is not None else None)


def _default_eps(dtype: torch.dtype) -> float:
    """PyTorch's eps when none is given: the machine epsilon of the type it computes in, float32 for
    float16 and bfloat16 inputs (their own epsilons, 1e-3 and 8e-3, would change small rows)."""
    return torch.finfo(torch.float32 if dtype in HALF_DTYPES else dtype).eps


def _plan(launcher, weighted: bool, rows: int | None, default_eps: float, out_dtype: torch.dtype):
    """The direct call of one key; `rows` is N when the input is viewed as [-1, N] rows. The common
    case (2-D input with a weight) is one call."""
    if weighted and rows is None:
        return lambda input, weight, eps: launcher(input, weight, default_eps if eps is None else eps, out_dtype)[0]

    def call(input, weight, eps):
        x = input if rows is None else input.reshape(-1, rows)
        eps = default_eps if eps is None else eps
        if weighted:
            out = launcher(x, weight if rows is None else weight.reshape(rows), eps, out_dtype)[0]
        else:
            out = launcher(x, eps, out_dtype)[0]
        return out if rows is None else out.view(input.shape)
    return call


def _rms_norm(input: Tensor, normalized_shape, weight: Tensor | None, eps: float | None, key,
              out_dtype: torch.dtype | None = None) -> Tensor:
    """The full path; `key` is the direct-call key (None: the call goes through the custom op);
    the output is in `out_dtype` (default: the input's)."""
    if fallback_reason(input, normalized_shape, weight) is not None:
        return ORIGINAL["rms_norm"](input, normalized_shape, weight, eps)
    x, w = _as_rows(input, normalized_shape, weight)
    default_eps = _default_eps(input.dtype)
    out_dtype = out_dtype or input.dtype
    if key is None:
        out = _eager.apply(rms_norm_fwd, _RmsNormFunction, x, w, default_eps if eps is None else eps, out_dtype)[0]
    else:
        out = _forward(x, w, default_eps if eps is None else eps, out_dtype)[0]
        op = "rms_norm_fwd" if w is not None else "rms_norm_noweight_fwd"
        launcher = chosen_launcher(op, x.shape, x, _fwd_dtypes(x, w, out_dtype))
        if launcher is not None:
            rows = None if x is input else x.shape[1]
            _direct.store(key, _plan(launcher, w is not None, rows, default_eps, out_dtype), launcher)
    return out if x is input else out.view(input.shape)


def _reads_as_they_are(input, normalized_shape, weight) -> bool:
    """Whether autocast's rms_norm of these arguments is one kernel on them as they are: half rows,
    no weight or one of a kernel dtype, no other reason to run PyTorch's."""
    return (isinstance(input, Tensor) and input.dtype in HALF_DTYPES
            and fallback_reason(input, normalized_shape, weight) is None)


def _float32_of_half(input: Tensor, normalized_shape, weight: Tensor | None, eps: float | None) -> Tensor:
    """rms_norm inside an autocast region that casts its arguments to float32 (CUDA's policy), of
    arguments `_reads_as_they_are`: the half rows read as they are and the output written in float32
    (autocast's casts are exact, so the result is the same)."""
    with torch.autocast(input.device.type, enabled=False):
        return _rms_norm(input, normalized_shape, weight, eps, None, torch.float32)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Same as torch.nn.functional.rms_norm."""
    if _autocast.enabled() and _autocast.applies("rms_norm", input):
        if _reads_as_they_are(input, normalized_shape, weight):
            return _float32_of_half(input, normalized_shape, weight, eps)
        return _autocast.call(rms_norm, "rms_norm", input, normalized_shape, weight, eps)
    dims = tuple(normalized_shape) if normalized_shape.__class__ is list else normalized_shape
    tag = (rms_norm, dims)
    if not _direct._is_compiling():
        out = _direct.replay(tag, input, weight, eps)
        if out is not _direct.MISSING:
            return out
    key = _direct.key(tag, input, weight)
    if key is not None:
        out = _direct.run(key, input, weight, eps)
        if out is not _direct.MISSING:
            return out
    return _rms_norm(input, normalized_shape, weight, eps, key)


def rmsnorm(x: Tensor, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """RMSNorm over the last dimension of `x` (rms_norm with normalized_shape = x.shape[-1:])."""
    if _autocast.enabled() and _autocast.applies("rms_norm", x):
        shape = x.shape[-1:] if isinstance(x, Tensor) and x.dim() > 0 else None
        if shape is not None and _reads_as_they_are(x, shape, weight):
            return _float32_of_half(x, shape, weight, eps)
        return _autocast.call(rmsnorm, "rms_norm", x, weight, eps)
    if not _direct._is_compiling():
        out = _direct.replay(rmsnorm, x, weight, eps)
        if out is not _direct.MISSING:
            return out
    key = _direct.key(rmsnorm, x, weight)
    if key is not None:
        out = _direct.run(key, x, weight, eps)
        if out is not _direct.MISSING:
            return out
    if not isinstance(x, Tensor) or x.dim() == 0:
        return ORIGINAL["rms_norm"](x, list(getattr(x, "shape", ()))[-1:], weight, eps)
    return _rms_norm(x, x.shape[-1:], weight, eps, key)


def explain_rms_norm(input, normalized_shape, weight=None, eps=None):
    reason = fallback_reason(input, normalized_shape, weight)
    if reason is not None:
        return explanation("rms_norm", reason)
    x, w = _as_rows(input, normalized_shape, weight)
    out_dtype = x.dtype
    if _autocast.enabled() and _autocast.applies("rms_norm", input):
        if not _reads_as_they_are(input, normalized_shape, weight):
            return _autocast.described(explain_rms_norm, "rms_norm", input, normalized_shape, weight, eps)
        out_dtype = torch.float32
    suffix = "" if w is not None else "noweight_"
    backward = [_call(f"rms_norm_{suffix}bwd", x, _bwd_dtypes(out_dtype, x, w))] if needs_autograd(input, weight) else []
    explained = explanation("rms_norm", None, [_call(f"rms_norm_{suffix}fwd", x, _fwd_dtypes(x, w, out_dtype))], backward)
    for decisions in (explained.forward, explained.backward):
        for decision in list(decisions):
            if decision.dtypes is not None and not decision.uses_kernel:  # `_float32_fwd` / `_float32_bwd`
                float32 = KernelCall(decision.op, x.device, torch.float32, SHAPE_KEYS, tuple(x.shape))
                decisions.append(float32.decision())
    return explained


def explain_rmsnorm(x, weight=None, eps=None):
    if not isinstance(x, Tensor) or x.dim() == 0:
        return explanation("rmsnorm", "input is not a tensor of rank >= 1 (PyTorch reports the error)")
    return explain_rms_norm(x, (x.shape[-1],), weight, eps)
