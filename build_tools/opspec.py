"""OpSpec: what a kernel-source module tells the build stage about one op (see docs/CONTRACTS.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from helion_kernels._variant import dtype_names_of_key


def dtypes_from_key(key: str) -> dict:
    """{argument: torch dtype} of a dtypes key (`helion_kernels._variant.dtypes_key`'s inverse)."""
    return {arg: getattr(torch, name) for arg, name in dtype_names_of_key(key).items()}


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
    # Per entry dtype, argument dtypes other than the entry's that the build also compiles each of
    # that dtype's entries for, at the entry's config: each a dict {argument: dtype}, a tensor
    # argument read in that dtype or a dtype argument (the output's) set to it. A call whose
    # arguments mix dtypes so (softmax's float32 output of half rows, RMSNorm's float32 weight or
    # gradient beside half rows) then runs one kernel instead of a cast and a kernel.
    dtype_variants: dict = field(default_factory=dict)

    def with_dtypes(self, args: tuple, dtypes: dict) -> tuple:
        """`args` (as `make_inputs` makes them) with each argument named in `dtypes` in its dtype:
        a tensor cast to it, a dtype argument replaced by it."""
        names = list(self.kernel.signature.parameters)
        args = list(args)
        for name, dtype in dtypes.items():
            position = names.index(name)
            args[position] = dtype if isinstance(args[position], torch.dtype) else args[position].to(dtype)
        return tuple(args)
