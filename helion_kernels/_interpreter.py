"""Corrections to Triton's CPU interpreter (TRITON_INTERPRET=1), applied once on import when it is on.

Triton 3.6's interpreter keeps bfloat16 blocks as raw uint16 bit patterns and multiplies those
integers in `tl.dot`, so every bf16 matrix product it computes is wrong. We widen bf16 operands to
float32 before the product, which is what the GPU's tensor cores compute (fp32 accumulation)."""
from __future__ import annotations

import os

_APPLIED: list = []


def apply() -> None:
    if _APPLIED or os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter.InterpreterBuilder.create_dot

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            data = (handle.data.astype(np.uint32) << 16).view(np.float32)
            return interpreter.TensorHandle(data, tl.float32)
        return handle

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return original(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot
    _APPLIED.append(True)


apply()
