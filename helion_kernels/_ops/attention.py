"""Attention: custom ops `helion_kernels::attention_fwd/bwd` and `scaled_dot_product_attention`.

Kernels take q[B,H,Sq,D], k/v[B,Hkv,Sk,D] (Hkv divides H: grouped-query attention), a causal flag
(PyTorch's top-left alignment) and the scale; the forward also returns the row log-sum-exp (fp32)
that the backward uses.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .. import _autocast, _direct, _eager
from .._backend import ORIGINAL, device_reason, dtype_reason, needs_autograd, transform_reason
from .._plan import KernelCall, explanation, launch

SHAPE_KEYS = ("B", "H", "Hkv", "Sq", "Sk", "D", "causal")


def _key(q: Tensor, k: Tensor, causal: bool) -> tuple:
    batch, heads, q_len, head_dim = q.shape
    return batch, heads, k.shape[1], q_len, k.shape[2], head_dim, causal


def _call(op: str, q: Tensor, k: Tensor, causal: bool) -> KernelCall:
    return KernelCall(op, q.device, q.dtype, SHAPE_KEYS, _key(q, k, causal))


def _expand_kv(q: Tensor, t: Tensor) -> Tensor:
    groups = q.shape[1] // t.shape[1]
    return t if groups == 1 else t.repeat_interleave(groups, dim=1)


def _scores(q: Tensor, k: Tensor, scale: float, causal: bool) -> Tensor:
    scores = q.float() @ _expand_kv(q, k).float().transpose(-1, -2) * scale
    if causal:
        q_len, kv_len = scores.shape[-2:]
        keep = torch.ones(q_len, kv_len, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return scores


def _torch_fwd(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float):
    scores = _scores(q, k, scale, causal)
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.exp(scores - lse[..., None]) @ _expand_kv(q, v).float()
    return out.to(q.dtype), lse


def _fold_groups(grad: Tensor, kv: Tensor) -> Tensor:
    batch, heads, seq, dim = grad.shape
    return grad.view(batch, kv.shape[1], heads // kv.shape[1], seq, dim).sum(2)


def _torch_bwd(grad_out, q, k, v, out, lse, causal: bool, scale: float):
    probs = torch.exp(_scores(q, k, scale, causal) - lse[..., None])
    grad = grad_out.float()
    delta = (grad * out.float()).sum(-1, keepdim=True)
    dv = probs.transpose(-1, -2) @ grad
    dp = grad @ _expand_kv(q, v).float().transpose(-1, -2)
    ds = probs * (dp - delta)
    dq = ds @ _expand_kv(q, k).float() * scale
    dk = ds.transpose(-1, -2) @ q.float() * scale
    return dq.to(q.dtype), _fold_groups(dk, k).to(k.dtype), _fold_groups(dv, v).to(v.dtype)


def _forward(q, k, v, causal, scale):
    return launch("attention_fwd", SHAPE_KEYS, _key(q, k, causal), q, (q, k, v, causal, scale), _torch_fwd)


def _fwd_impl(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float) -> tuple[Tensor, Tensor]:
    """Attention forward; returns (out, lse[B,H,Sq] in float32)."""
    if device_reason(q.device, q.dtype, uses_dot=True) is not None:
        return _torch_fwd(q, k, v, causal, scale)
    return _forward(q, k, v, causal, scale)


attention_fwd = torch.library.custom_op("helion_kernels::attention_fwd", _fwd_impl, mutates_args=())


@attention_fwd.register_fake
def _(q, k, v, causal, scale):
    return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)


def _bwd_impl(grad_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
              causal: bool, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """Attention backward; returns (dq, dk, dv)."""
    args = (grad_out.contiguous(), q, k, v, out, lse, causal, scale)
    if device_reason(q.device, q.dtype, uses_dot=True) is not None:
        return _torch_bwd(*args)
    return launch("attention_bwd", SHAPE_KEYS, _key(q, k, causal), q, args, _torch_bwd)


attention_bwd = torch.library.custom_op("helion_kernels::attention_bwd", _bwd_impl, mutates_args=())


@attention_bwd.register_fake
def _(grad_out, q, k, v, out, lse, causal, scale):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output):
    """lse is not differentiable; unmaterialized grads skip a zero-filled grad for it."""
    q, k, v, causal, scale = inputs
    ctx.save_for_backward(q, k, v, *output)
    ctx.causal, ctx.scale = causal, scale
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)


def _autograd_backward(ctx, grad_out, _grad_lse):
    if grad_out is None:
        return None, None, None, None, None
    q, k, v, out, lse = ctx.saved_tensors
    if _eager.records_grad(grad_out, q, k, v):
        # create_graph: PyTorch ops, whose gradient autograd takes again; the forward is computed
        # again (the saved lse is not differentiable)
        dq, dk, dv = _torch_bwd(grad_out, q, k, v, *_torch_fwd(q, k, v, ctx.causal, ctx.scale), ctx.causal, ctx.scale)
    else:
        dq, dk, dv = _eager.call(attention_bwd, _bwd_impl, grad_out, q, k, v, out, lse, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None


attention_fwd.register_autograd(_autograd_backward, setup_context=_setup_context)
_AttentionFunction = _eager.autograd_function("AttentionFunction", _fwd_impl, _setup_context, _autograd_backward)


def fallback_reason(query, key, value, attn_mask, dropout_p, enable_gqa) -> str | None:
    """Why this call runs PyTorch's scaled_dot_product_attention, or None."""
    tensors = (query, key, value)
    if not all(isinstance(t, Tensor) for t in tensors):
        return "arguments are not tensors (PyTorch reports the error)"
    if attn_mask is not None:
        return "attn_mask is not supported by the kernels"
    if dropout_p != 0.0:
        return "dropout_p > 0 is not supported by the kernels"
    if any(t.dtype != query.dtype or t.device != query.device for t in tensors):
        return "query, key and value differ in dtype or device (PyTorch reports the error)"
    if query.dim() < 3 or key.dim() != query.dim() or value.dim() != query.dim():
        return "inputs are not [..., L, E] tensors of equal rank"
    if key.shape != value.shape or query.shape[:-3] != key.shape[:-3]:
        return "key/value shapes differ or batch dims broadcast"
    if query.shape[-1] != key.shape[-1]:
        return "query and key head dims differ (PyTorch reports the error)"
    heads, kv_heads = query.shape[-3], key.shape[-3]  # a 3-D call's first dim is its heads, as PyTorch's GQA takes it
    if heads != kv_heads and not (enable_gqa and heads % kv_heads == 0):
        return "head counts differ without enable_gqa (PyTorch reports the error)"
    if any(t.numel() == 0 for t in tensors):
        return "empty tensor"
    return dtype_reason(query.dtype) or device_reason(query.device, query.dtype, uses_dot=True) or transform_reason()


def _as_4d(t: Tensor) -> Tensor:
    """[B, H, L, E]: a 3-D [N, L, E] tensor is one batch of N heads (PyTorch compares and groups its
    first dim as heads), higher ranks fold their batch dims into B."""
    if t.dim() == 4:
        return t
    if t.dim() == 3:
        return t.unsqueeze(0)
    return t.reshape(-1, *t.shape[-3:])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """Same as torch.nn.functional.scaled_dot_product_attention."""
    if _autocast.enabled() and _autocast.applies("scaled_dot_product_attention", query):
        return _autocast.call(scaled_dot_product_attention, "scaled_dot_product_attention", query, key, value,
                              attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if fallback_reason(query, key, value, attn_mask, dropout_p, enable_gqa) is not None:
        return ORIGINAL["scaled_dot_product_attention"](
            query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
            scale=scale, enable_gqa=enable_gqa)
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    causal = bool(is_causal)
    if _direct.direct(query, key, value):
        out = _forward(q, k, v, causal, scale)[0]
    else:
        out = _eager.apply(attention_fwd, _AttentionFunction, q, k, v, causal, scale)[0]
    return out if q is query else out.view(query.shape)


def explain_scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                         is_causal=False, scale=None, enable_gqa=False):
    if _autocast.enabled() and _autocast.applies("scaled_dot_product_attention", query):
        return _autocast.described(explain_scaled_dot_product_attention, "scaled_dot_product_attention", query, key,
                                   value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    reason = fallback_reason(query, key, value, attn_mask, dropout_p, enable_gqa)
    name = "scaled_dot_product_attention"
    if reason is not None:
        return explanation(name, reason)
    q, k, causal = _as_4d(query), _as_4d(key), bool(is_causal)
    backward = []
    if needs_autograd(query, key, value):
        backward = [_call("attention_bwd", q, k, causal)]
    return explanation(name, None, [_call("attention_fwd", q, k, causal)], backward)
