"""Direct calls: the public functions' fast path around torch.library.

A call on plain tensors (torch.Tensor or nn.Parameter, no subclass such as FakeTensor) that
autograd need not record (grad mode off, or no input requires grad) and that neither torch.compile
nor a functorch transform is tracing may skip the custom op. Its exact key (the function, each tensor's shape, dtype and device,
the other arguments) finds a plan in one dict lookup: a small function that calls the generated
launcher the dispatcher chose for that key. A key's first call takes the full path, which stores
the plan when a kernel ran (PyTorch fallbacks keep the full path). Any other call goes through
the custom op (autograd, tracing, fake tensors, opcheck).

Native replay: a plan stored with its launcher, when the generated module lists that launcher in
`REPLAYABLE`, records its next calls (up to RECORDINGS_PER_KEY, launch_helpers' `_record`); from
then on `replay(tag, *args)`, called first by the public functions (outside torch.compile's
tracing), runs the whole call in C for arguments with a recorded call's properties: the same
checks as `key` plus the tensors' strides and alignment and the other arguments' values, then the
allocations and the launches (see build_tools/dsl/native_replay.py). It returns MISSING for
anything else, and the call goes on as above.
"""
from __future__ import annotations

import sys

import torch
from triton.runtime.errors import OutOfResources

from ._dispatch import DISPATCHER

PLAIN = frozenset({torch.Tensor, torch.nn.Parameter})
# module-level names for the per-call checks (an attribute chain costs a lookup per link)
_is_compiling = torch.compiler.is_compiling
_functorch_transforms_active = torch._C._are_functorch_transforms_active
_grad_enabled = torch._C.is_grad_enabled
MISSING = object()
PLANS = DISPATCHER.plans
REPLAYS = DISPATCHER.replays  # tag -> native replay plans of its recorded calls, most recently used first
REPLAYS_PER_TAG = 64
RECORDINGS_PER_KEY = 4  # calls a key's plan records (replay misses: other strides, alignment, eps...)


def direct(*tensors) -> bool:
    """True when a call on `tensors` (at most three, None entries allowed) may skip torch.library."""
    return key(None, *tensors) is not None


def key(tag, a, b=None, c=None) -> tuple | None:
    """The direct-call key of a call identified by `tag` (the function and its non-tensor
    arguments) on the tensors a, b, c (b and c may be None), or None when the call must go
    through torch.library. Spelled out per tensor count, the checks
    cheapest first: this runs on every call."""
    if a.__class__ not in PLAIN or _is_compiling() or _functorch_transforms_active():
        return None
    if b is None and c is None:
        if _grad_enabled() and a.requires_grad:
            return None
        return (tag, a.shape, a.dtype, a.device)
    if not (b is None or b.__class__ in PLAIN) or not (c is None or c.__class__ in PLAIN):
        return None
    if _grad_enabled() and (a.requires_grad or (b is not None and b.requires_grad)
                            or (c is not None and c.requires_grad)):
        return None
    if c is None:
        return (tag, a.shape, a.dtype, a.device, b.shape, b.dtype, b.device)
    if b is None:
        return (tag, a.shape, a.dtype, a.device, None, c.shape, c.dtype, c.device)
    return (tag, a.shape, a.dtype, a.device, b.shape, b.dtype, b.device, c.shape, c.dtype, c.device)


def run(key, *args):
    """The stored plan for `key` applied to args, or MISSING when there is none (an unhashable key,
    such as one holding a list, has none). A plan whose kernel turns out not to fit the device
    (a new specialization compiled) is dropped, and the full path handles the call."""
    try:
        plan = PLANS.get(key)
    except TypeError:
        return MISSING
    if plan is None:
        return MISSING
    try:
        return plan(*args)
    except OutOfResources:
        PLANS.pop(key, None)
        return MISSING


def store(key, plan, launcher=None) -> None:
    """Remember `plan` for `key` (unhashable keys are not stored). `launcher` is the generated
    launcher the plan calls, given only when the plan passes its own arguments to it, as they are
    or as views starting at their first element (`weight.t()`, a 3-D input's rows
    `x.reshape(-1, n)`), and returns its result or an element of it, as it is or viewed in another
    shape (`out.view(x.shape)`): then, if the launcher is replayable, the key's next calls are
    recorded for native replay (a call whose reshape copies is recorded but not replayed)."""
    module = None if launcher is None else sys.modules.get(launcher.__module__)
    if module is not None and launcher.__name__ in getattr(module, "REPLAYABLE", ()):
        plan = _recording(key, plan, module)
    try:
        PLANS[key] = plan
    except TypeError:
        pass


def _no_replay(tag, *args):
    return MISSING


replay = _no_replay


def _recording(key, plan, module):
    """`plan` that records its calls (the first RECORDINGS_PER_KEY: calls that `replay` did not
    run) and keeps what it recorded for `replay`."""
    left = RECORDINGS_PER_KEY

    def record(*args):
        nonlocal left
        left -= 1
        if left <= 0:
            PLANS[key] = plan
        out, recorded = module._record(plan, args, MISSING)
        if recorded is not None:
            _keep(key[0], recorded, module)
        return out
    return record


def _keep(tag, recorded, module) -> None:
    """Put `recorded` first in `tag`'s plans (the replay moves each plan it runs to the front, so
    the least recently used is last and is dropped beyond REPLAYS_PER_TAG); the first plan kept
    binds `replay` to the native replay of `module`'s C module."""
    global replay
    plans = REPLAYS.setdefault(tag, [])
    plans.insert(0, recorded)
    del plans[REPLAYS_PER_TAG:]
    if replay is _no_replay:
        replay = module._replayer(MISSING, REPLAYS)
