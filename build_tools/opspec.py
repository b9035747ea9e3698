"""OpSpec: what a kernel-source module tells the build stage about one op (see docs/CONTRACTS.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class OpSpec:
    name: str
    kernel: Any
    make_inputs: Callable[[dict, torch.dtype, str, int], tuple]
    reference: Callable[..., Any]
    shapes: list
    dtypes: tuple
    tolerance: Callable[[torch.dtype], tuple]
    cost: Callable[[dict, torch.dtype], tuple]
    exact_keys: tuple = field(default=())
    # Weights of the shape keys in the dispatcher's nearest-shape distance (default 1 each): the
    # reduced dimension of a row op weighs more, since its size decides a config's structure.
    key_weights: dict = field(default_factory=dict)
    # Shape keys that size the op's reduced dimensions. A `static_reduction_sizes` variant compiles
    # those sizes in, so the dispatcher runs it only where they equal its tuned shape's and sends
    # other sizes to its dynamic twin (the same config with the flag off, generated beside it).
    reduction_keys: tuple = field(default=())
    # Optional plain-PyTorch implementation at the input dtype (same args as the kernel); the
    # autotuner times it eagerly and under torch.compile as the peers recorded in tuned tables.
    baseline: Callable[..., Any] | None = None
    # The kernel argument that sets the output's dtype, and per entry dtype the other output dtypes
    # the build generates for that dtype's entries, at each entry's config: a call whose output
    # dtype is not its input's (softmax with dtype=float32 on half inputs) then runs one kernel that
    # reads the input once and writes the wider output, instead of a cast and a kernel.
    out_dtype_arg: str | None = None
    out_dtypes: dict = field(default_factory=dict)

    def with_out_dtype(self, args: tuple, out_dtype: torch.dtype) -> tuple:
        """`args` (as `make_inputs` makes them) with the output dtype argument set to `out_dtype`."""
        position = list(self.kernel.signature.parameters).index(self.out_dtype_arg)
        return args[:position] + (out_dtype,) + args[position + 1:]
