"""Matrix products: custom ops `helion_kernels::matmul/bmm/linear` and the `matmul`/`linear` wrappers.

Backward passes are composed from the same custom ops (dA = dC·Bᵀ, dB = Aᵀ·dC).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .. import _autocast, _direct, _eager
from .._backend import ORIGINAL, device_reason, dtype_reason, needs_autograd, transform_reason
from .._plan import KernelCall, chosen_launcher, explanation, launch

MM_KEYS = ("M", "N", "K")
BMM_KEYS = ("B", "M", "N", "K")


def _mm_dims(t: Tensor, m: int, n: int, k: int) -> KernelCall:
    return KernelCall("matmul", t.device, t.dtype, MM_KEYS, (m, n, k))


def _mm_call(a: Tensor, b: Tensor) -> KernelCall:
    return _mm_dims(a, a.shape[0], b.shape[1], a.shape[1])


def _bmm_dims(t: Tensor, batch: int, m: int, n: int, k: int) -> KernelCall:
    return KernelCall("bmm", t.device, t.dtype, BMM_KEYS, (batch, m, n, k))


def _bmm_call(a: Tensor, b: Tensor) -> KernelCall:
    return _bmm_dims(a, a.shape[0], a.shape[1], b.shape[2], a.shape[2])


def _linear_call(x: Tensor, w: Tensor) -> KernelCall:
    return KernelCall("linear", x.device, x.dtype, MM_KEYS, (x.shape[0], w.shape[0], x.shape[1]))


def _mm(a: Tensor, b: Tensor) -> Tensor:
    if device_reason(a.device, a.dtype, uses_dot=True) is not None:
        return torch.mm(a, b)
    return launch("matmul", MM_KEYS, (a.shape[0], b.shape[1], a.shape[1]), a, (a, b), torch.mm)


def _bmm(a: Tensor, b: Tensor) -> Tensor:
    if device_reason(a.device, a.dtype, uses_dot=True) is not None:
        return torch.bmm(a, b)
    return launch("bmm", BMM_KEYS, (a.shape[0], a.shape[1], b.shape[2], a.shape[2]), a, (a, b), torch.bmm)


def _linear_composed(x: Tensor, w: Tensor, bias: Tensor) -> Tensor:
    return _mm(x, w.t()).add_(bias)


def _linear(x: Tensor, w: Tensor, bias: Tensor | None) -> Tensor:
    if device_reason(x.device, x.dtype, uses_dot=True) is not None:
        return ORIGINAL["linear"](x, w, bias)
    if bias is None:
        return _mm(x, w.t())
    return launch("linear", MM_KEYS, (x.shape[0], w.shape[0], x.shape[1]), x, (x, w, bias), _linear_composed)


@torch.library.custom_op("helion_kernels::matmul", mutates_args=())
def matmul_op(a: Tensor, b: Tensor) -> Tensor:
    """a[M,K] @ b[K,N]."""
    return _mm(a, b)


@matmul_op.register_fake
def _(a, b):
    return a.new_empty(a.shape[0], b.shape[1])


@torch.library.custom_op("helion_kernels::bmm", mutates_args=())
def bmm_op(a: Tensor, b: Tensor) -> Tensor:
    """a[B,M,K] @ b[B,K,N]."""
    return _bmm(a, b)


@bmm_op.register_fake
def _(a, b):
    return a.new_empty(a.shape[0], a.shape[1], b.shape[2])


@torch.library.custom_op("helion_kernels::linear", mutates_args=())
def linear_op(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """x[M,K] @ weight[N,K]ᵀ + bias[N]."""
    return _linear(x, weight, bias)


@linear_op.register_fake
def _(x, weight, bias):
    return x.new_empty(x.shape[0], weight.shape[0])


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:2])
    ctx.has_bias = len(inputs) > 2 and inputs[2] is not None


def _matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    da = _eager.call(matmul_op, _mm, grad, b.t()) if ctx.needs_input_grad[0] else None
    db = _eager.call(matmul_op, _mm, a.t(), grad) if ctx.needs_input_grad[1] else None
    return da, db


def _bmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    da = _eager.call(bmm_op, _bmm, grad, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    db = _eager.call(bmm_op, _bmm, a.transpose(1, 2), grad) if ctx.needs_input_grad[1] else None
    return da, db


def _linear_backward(ctx, grad):
    x, w = ctx.saved_tensors
    dx = _eager.call(matmul_op, _mm, grad, w) if ctx.needs_input_grad[0] else None
    dw = _eager.call(matmul_op, _mm, grad.t(), x) if ctx.needs_input_grad[1] else None
    db = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return dx, dw, db


matmul_op.register_autograd(_matmul_backward, setup_context=_save_inputs)
bmm_op.register_autograd(_bmm_backward, setup_context=_save_inputs)
linear_op.register_autograd(_linear_backward, setup_context=_save_inputs)
_MatmulFunction = _eager.autograd_function("MatmulFunction", _mm, _save_inputs, _matmul_backward)
_BmmFunction = _eager.autograd_function("BmmFunction", _bmm, _save_inputs, _bmm_backward)
_LinearFunction = _eager.autograd_function("LinearFunction", _linear, _save_inputs, _linear_backward)


def _common_reason(tensors) -> str | None:
    """Reasons shared by matmul and linear, checked after the shape rules."""
    first = tensors[0]
    if any(t.dtype != first.dtype or t.device != first.device for t in tensors[1:]):
        return "operands differ in dtype or device (PyTorch reports the error or promotes)"
    if any(t.numel() == 0 for t in tensors):
        return "empty tensor"
    return dtype_reason(first.dtype) or device_reason(first.device, first.dtype, uses_dot=True) or transform_reason()


def matmul_reason(input, other) -> str | None:
    """Why torch.matmul semantics here need PyTorch's implementation, or None."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        return "arguments are not tensors (PyTorch reports the error)"
    if input.dim() < 2 or other.dim() < 2:
        return "vector operand (1-D matmul)"
    if input.shape[-1] != other.shape[-2]:
        return "inner dimensions differ (PyTorch reports the error)"
    batched = input.dim() == 3 and other.dim() == 3 and input.shape[0] == other.shape[0]
    if other.dim() != 2 and not batched:
        return "batched operands that broadcast"
    return _common_reason((input, other))


def _matmul_plan(launcher, rows: int | None):
    """The direct call of one key (2-D `other`); `rows` is K when the input is viewed as [-1, K]."""
    def call(input, other):
        if rows is None:
            return launcher(input, other)
        return launcher(input.reshape(-1, rows), other).view(*input.shape[:-1], other.shape[-1])
    return call


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Same as torch.matmul."""
    if _autocast.enabled() and _autocast.applies("matmul", input):
        return _autocast.call(matmul, "matmul", input, other)
    if not _direct._is_compiling():
        out = _direct.replay(matmul, input, other)
        if out is not _direct.MISSING:
            return out
    key = _direct.key(matmul, input, other)
    if key is not None:
        out = _direct.run(key, input, other)
        if out is not _direct.MISSING:
            return out
    if matmul_reason(input, other) is not None:
        return ORIGINAL["matmul"](input, other)
    if other.dim() == 3:
        return _eager.apply(bmm_op, _BmmFunction, input, other) if key is None else _bmm(input, other)
    a = input if input.dim() == 2 else input.reshape(-1, input.shape[-1])
    if key is None:
        out = _eager.apply(matmul_op, _MatmulFunction, a, other)
    else:
        out = _mm(a, other)
        _store_mm_plan(key, a, other, _matmul_plan, None if a is input else a.shape[1])
    return out if a is input else out.view(*input.shape[:-1], other.shape[-1])


def _store_mm_plan(key, a: Tensor, b: Tensor, make, *details) -> None:
    """Store the direct plan of a product that ran the `matmul` kernel; float32 products keep the
    full path (whether they may use TF32 is PyTorch's global setting, checked on every call)."""
    if a.dtype is torch.float32:
        return
    launcher = chosen_launcher("matmul", (a.shape[0], b.shape[1], a.shape[1]), a)
    if launcher is not None:
        _direct.store(key, make(launcher, *details), launcher)


def linear_reason(input, weight, bias) -> str | None:
    """Why F.linear semantics here need PyTorch's implementation, or None."""
    tensors = (input, weight) if bias is None else (input, weight, bias)
    if not all(isinstance(t, Tensor) for t in tensors):
        return "arguments are not tensors (PyTorch reports the error)"
    if input.dim() < 1 or weight.dim() != 2 or input.shape[-1] != weight.shape[1]:
        return "shapes outside x[..., K] @ weight[N, K]ᵀ (PyTorch handles or reports the error)"
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        return "bias is not of shape [N] (PyTorch broadcasts or reports the error)"
    return _common_reason(tensors)


def _linear_plan(launcher, rows: int | None, biased: bool):
    """The direct call of one key; `rows` is K when the input is viewed as [-1, K]."""
    def call(input, weight, bias):
        x = input if rows is None else input.reshape(-1, rows)
        out = launcher(x, weight, bias) if biased else launcher(x, weight.t())
        return out if rows is None else out.view(*input.shape[:-1], weight.shape[0])
    return call


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Same as torch.nn.functional.linear."""
    if _autocast.enabled() and _autocast.applies("linear", input):
        return _autocast.call(linear, "linear", input, weight, bias)
    if not _direct._is_compiling():
        out = _direct.replay(linear, input, weight, bias)
        if out is not _direct.MISSING:
            return out
    key = _direct.key(linear, input, weight, bias)
    if key is not None:
        out = _direct.run(key, input, weight, bias)
        if out is not _direct.MISSING:
            return out
    if linear_reason(input, weight, bias) is not None:
        return ORIGINAL["linear"](input, weight, bias)
    x = input if input.dim() == 2 else input.reshape(-1, input.shape[-1])
    if key is None:
        out = _eager.apply(linear_op, _LinearFunction, x, weight, bias)
    else:
        out = _linear(x, weight, bias)
        rows = None if x is input else x.shape[1]
        if bias is None:
            _store_mm_plan(key, x, weight.t(), _linear_plan, rows, False)
        elif x.dtype is not torch.float32:
            launcher = chosen_launcher("linear", (x.shape[0], weight.shape[0], x.shape[1]), x)
            if launcher is not None:
                _direct.store(key, _linear_plan(launcher, rows, True), launcher)
    return out if x is input else out.view(*input.shape[:-1], weight.shape[0])


def explain_matmul(input, other):
    if _autocast.enabled() and _autocast.applies("matmul", input):
        return _autocast.described(explain_matmul, "matmul", input, other)
    reason = matmul_reason(input, other)
    if reason is not None:
        return explanation("matmul", reason)
    if other.dim() == 3:
        (batch, m, k), n = input.shape, other.shape[2]
        call = _bmm_call(input, other)
        backward = [_bmm_dims(input, batch, m, k, n), _bmm_dims(input, batch, k, n, m)]
    else:
        a = input.reshape(-1, input.shape[-1])
        (m, k), n = a.shape, other.shape[1]
        call, backward = _mm_call(a, other), [_mm_dims(a, m, k, n), _mm_dims(a, k, n, m)]
    return explanation("matmul", None, [call], backward if needs_autograd(input, other) else [])


def explain_linear(input, weight, bias=None):
    if _autocast.enabled() and _autocast.applies("linear", input):
        return _autocast.described(explain_linear, "linear", input, weight, bias)
    reason = linear_reason(input, weight, bias)
    if reason is not None:
        return explanation("linear", reason)
    x = input.reshape(-1, input.shape[-1])
    (m, k), n = x.shape, weight.shape[0]
    backward = [_mm_dims(x, m, k, n), _mm_dims(x, n, k, m)] if needs_autograd(input, weight, bias) else []
    forward = _linear_call(x, weight) if bias is not None else _mm_dims(x, m, n, k)
    return explanation("linear", None, [forward], backward)
