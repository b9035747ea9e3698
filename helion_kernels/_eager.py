"""Eager calls around torch.library: a custom op's implementation runs without the dispatcher
when nothing needs it.

A custom-op call is a dispatcher round trip: tens of µs of host time on the lent H200's host
(tools/bwd_host_probe.py: the rms_norm backward op 89 µs against 55 µs for its launcher), paid
twice by an autograd backward (the forward op's generated autograd wrapper, then the backward op).
Eager code on plain tensors needs none of what the dispatcher adds (tracing, fake tensors,
functionalization), so:
- `call(op, impl, *args)` runs `impl` (the function the op was made from) directly when the call
  is eager and autograd need not record it, else the op;
- `autograd_function(...)` builds, from the same implementation, setup_context and backward that
  the op registers, the torch.autograd.Function that eager calls needing autograd apply
  (`apply(op, function, *args)`), so both paths compute the same thing.
Under torch.compile, functorch transforms or on tensor subclasses everything goes through the ops.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ._direct import PLAIN, _functorch_transforms_active, _grad_enabled, _is_compiling

# These checks run on every call (twice per autograd step): plain loops over the arguments and
# the C functions bound once, no generators (a generator costs ~1 µs of host time here).


def eager(*args) -> bool:
    """Whether a call on `args` runs eagerly on plain tensors (not traced, no functorch transform)."""
    if _is_compiling() or _functorch_transforms_active():
        return False
    for arg in args:
        if isinstance(arg, Tensor) and arg.__class__ not in PLAIN:
            return False
    return True


def records_grad(*args) -> bool:
    """Whether autograd records a call on `args` (grad mode on and an input requires grad)."""
    if not _grad_enabled():
        return False
    for arg in args:
        if isinstance(arg, Tensor) and arg.requires_grad:
            return True
    return False


def call(op, impl, *args):
    """`op(*args)`, or `impl(*args)` when the call is eager and autograd need not record it (a
    backward runs with grad mode off, so the grad check comes first)."""
    if not records_grad(*args) and eager(*args):
        return impl(*args)
    return op(*args)


def autograd_function(name: str, impl, setup_context, backward) -> type:
    """A torch.autograd.Function running `impl` with the op's registered `setup_context(ctx, inputs,
    output)` and `backward(ctx, *grads)`."""
    def forward(ctx, *args):
        output = impl(*args)
        setup_context(ctx, args, output)
        return output

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(forward),
                                                   "backward": staticmethod(backward)})


def apply(op, function, *args):
    """`op(*args)` for a call autograd records: through `function` (the op's autograd_function)
    when the call is eager, else through the op."""
    return function.apply(*args) if eager(*args) else op(*args)
