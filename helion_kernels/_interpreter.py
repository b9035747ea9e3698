"""Corrections to Triton's CPU interpreter (TRITON_INTERPRET=1), applied once on import when it is on.

- Triton 3.6's interpreter keeps bfloat16 blocks as raw uint16 bit patterns and multiplies those
  integers in `tl.dot`, so every bf16 matrix product it computes is wrong. We widen bf16 operands to
  float32 before the product, which is what the GPU's tensor cores compute (fp32 accumulation).
- The interpreter runs a grid's programs one after another, so a program that waits for another
  program of its launch (`hl.wait` in the DSL) would wait forever. Kernels flagged so
  (CONCURRENT_PROGRAMS_FLAG on their Python function, set by the generated code) run every program
  in a thread of its own, with the program id kept per thread; the launch returns once all ended.
  A waiting program spins on atomics while holding the GIL, so a program thread yields it after
  each atomic; otherwise hundreds of spinning threads starve the one being waited for.
"""
from __future__ import annotations

import inspect
import os
import threading
import time

CONCURRENT_PROGRAMS_FLAG = "hk_concurrent_programs"  # the DSL's sync.CONCURRENT_PROGRAMS_FLAG

_APPLIED: list = []


def apply() -> None:
    if _APPLIED or os.environ.get("TRITON_INTERPRET") != "1":
        return
    from triton.runtime import interpreter

    _widen_bf16_dots(interpreter)
    _run_waiting_programs_concurrently(interpreter)
    _APPLIED.append(True)


def _widen_bf16_dots(interpreter) -> None:
    import numpy as np
    import triton.language as tl

    original = interpreter.InterpreterBuilder.create_dot

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            data = (handle.data.astype(np.uint32) << 16).view(np.float32)
            return interpreter.TensorHandle(data, tl.float32)
        return handle

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return original(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot


class _ProgramThreads:
    """Stands in for a kernel's Python function in the interpreter's grid loop (it shows the
    function's signature, annotations and globals to the loop's setup): each call, one per program
    after the loop set that program's id, starts a thread running the kernel under that id; the
    call for the last program waits for every thread and re-raises the first error."""

    def __init__(self, fn, builder, program_ids: threading.local):
        self.fn, self.builder, self.program_ids = fn, builder, program_ids
        self.__signature__ = inspect.signature(fn)
        self.__annotations__ = fn.__annotations__
        self.__globals__ = fn.__globals__
        self.__name__ = fn.__name__
        self.threads: list = []
        self.errors: list = []

    def __call__(self, **args):
        program_id = self.builder.grid_idx
        thread = threading.Thread(target=self._program, args=(program_id, args), daemon=True)
        thread.start()
        self.threads.append(thread)
        if program_id == tuple(count - 1 for count in self.builder.grid_dim):
            for started in self.threads:
                started.join()
            if self.errors:
                raise self.errors[0]

    def _program(self, program_id, args) -> None:
        self.program_ids.grid_idx = program_id
        try:
            self.fn(**args)
        except BaseException as error:  # noqa: BLE001 - re-raised in the launching thread
            self.errors.append(error)


def _yielding_in_program_threads(atomic, program_ids):
    def call(builder, *args, **kwargs):
        result = atomic(builder, *args, **kwargs)
        if hasattr(program_ids, "grid_idx"):  # a program thread of a concurrent launch
            time.sleep(0)
        return result

    return call


def _run_waiting_programs_concurrently(interpreter) -> None:
    program_ids = threading.local()
    builder_class = interpreter.InterpreterBuilder

    # The program id lives per thread (the instance's own value is the fallback of other threads).
    def get_grid_idx(builder):
        return getattr(program_ids, "grid_idx", builder.__dict__.get("grid_idx"))

    def set_grid_idx(builder, value):
        program_ids.grid_idx = value

    builder_class.grid_idx = property(get_grid_idx, set_grid_idx)
    for name in ("create_atomic_rmw", "create_atomic_cas"):
        setattr(builder_class, name, _yielding_in_program_threads(getattr(builder_class, name), program_ids))
    original_run = interpreter.InterpretedFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        if warmup or not getattr(self.fn, CONCURRENT_PROGRAMS_FLAG, False):
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        threads = _ProgramThreads(self.rewrite(), interpreter.interpreter_builder, program_ids)
        return interpreter.GridExecutor(threads, self.arg_names, grid, self.pre_run_hooks)(*args, **kwargs)

    interpreter.InterpretedFunction.run = run


apply()
