"""Plans of a call: the kernel launches it would make, or why it runs PyTorch; and their explanation."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from triton.runtime.errors import OutOfResources

from ._dispatch import DISPATCHER, Decision


@dataclass(frozen=True)
class KernelCall:
    """One launch a call would make: the op and its dispatch key."""

    op: str
    device: torch.device
    dtype: torch.dtype
    names: tuple
    values: tuple
    dtypes: tuple = ()  # (argument, dtype) of the arguments whose dtype is not `dtype` (`other_dtypes`)

    def decision(self) -> Decision:
        return DISPATCHER.select(self.op, self.device, self.dtype, self.names, self.values, self.dtypes)


@dataclass
class Explanation:
    """What `explain` reports: the path taken and, per launch, the dispatcher's decision."""

    function: str
    fallback_reason: str | None = None
    forward: list = field(default_factory=list)
    backward: list = field(default_factory=list)

    @property
    def uses_kernels(self) -> bool:
        return self.fallback_reason is None and any(d.uses_kernel for d in self.forward)

    def __str__(self) -> str:
        if self.fallback_reason is not None:
            return f"{self.function}: PyTorch implementation ({self.fallback_reason})"
        lines = [f"{self.function}:"]
        for stage, decisions in (("forward", self.forward), ("backward", self.backward)):
            for d in decisions:
                if d.uses_kernel:
                    what = f"kernel {d.op}__{d.variant} config={d.config}"
                elif d.dtypes is None:
                    what = f"PyTorch implementation of {d.op}"
                else:
                    what = f"the fallback of {d.op} for {d.dtypes}"
                lines.append(f"  {stage}: {what}")
                dtypes = d.dtype if d.dtypes is None else f"{d.dtype} with {d.dtypes}"
                lines.append(f"    arch={d.arch} dtype={dtypes} shape={d.shape}: {d.reason}")
                lines.extend(f"    note: {note}" for note in d.notes)
        return "\n".join(lines)


def explanation(function: str, reason: str | None, forward=(), backward=()) -> Explanation:
    """Build an Explanation from a fallback reason or the forward/backward KernelCalls."""
    if reason is not None:
        return Explanation(function, reason)
    return Explanation(function, None, [c.decision() for c in forward], [c.decision() for c in backward])


_DECISIONS = DISPATCHER._cache


def other_dtypes(dtype: torch.dtype, **arguments) -> tuple:
    """The dispatch key's (argument, dtype) pairs: each named argument dtype (None: absent) that is
    not `dtype`, in name order. On every call of the ops' custom-op path, so the common case (every
    dtype `dtype`'s) sorts nothing."""
    others = [(name, d) for name, d in arguments.items() if d is not None and d != dtype]
    return tuple(sorted(others)) if others else ()


def launch(op: str, names: tuple, values: tuple, like: torch.Tensor, args: tuple, fallback, dtypes: tuple = ()):
    """Run the generated variant chosen for (op, like's device and dtype, `dtypes` (`other_dtypes`),
    values), or `fallback` when there is none. A repeated key costs
    one dict lookup. A variant that does not fit the device (shared memory, registers) is replaced
    by the fallback for that key, and explain says so."""
    device, dtype = like.device, like.dtype
    key = (op, device, dtype, dtypes, values)
    decision = _DECISIONS.get(key)
    if decision is None:
        decision = DISPATCHER.select(op, device, dtype, names, values, dtypes)
    launcher = decision.launcher
    if launcher is None:
        return fallback(*args)
    try:
        return launcher(*args)
    except OutOfResources as error:
        _DECISIONS[key] = dataclasses.replace(
            decision, launcher=None,
            reason=f"variant {decision.variant} does not fit this device ({error}); running the op's fallback")
        return fallback(*args)


def chosen_launcher(op: str, values: tuple, like: torch.Tensor, dtypes: tuple = ()):
    """The launcher `launch` runs for (op, like's device and dtype, dtypes, values), or None
    when it runs the fallback there (or has not run there yet)."""
    decision = _DECISIONS.get((op, like.device, like.dtype, dtypes, values))
    return None if decision is None else decision.launcher
