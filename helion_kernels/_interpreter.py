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
- Its `tl.reduce` and `tl.associative_scan` with a combine function of our own (the DSL's
  NaN-propagating max, ...) call the function once per element, on scalars: a 300-wide softmax row
  in an 8192-lane block took 0.3 s per reduction. Where the function is straight-line code (no
  branch, loop or `and`/`or`, which would test a whole block as one truth value; calls only of
  triton.language and of functions like it), we combine elements of the axis as blocks instead:
  a reduction its adjacent pairs, halving the axis each step; a scan each element with the one 1,
  2, 4, ... before it. That is log2 of the extent calls, in an order under which an associative
  function (what both require) gives the same result, as a GPU's tree does. Other functions keep
  the interpreter's way.
"""
from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap
import threading
import time

CONCURRENT_PROGRAMS_FLAG = "hk_concurrent_programs"  # the DSL's sync.CONCURRENT_PROGRAMS_FLAG

_APPLIED: list = []


def apply() -> None:
    if _APPLIED or os.environ.get("TRITON_INTERPRET") != "1":
        return
    from triton.runtime import interpreter

    _widen_bf16_dots(interpreter)
    _reduce_and_scan_pairwise(interpreter)
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


# triton.language's functions, and the interpreter's stand-ins for them while a kernel runs
_ELEMENTWISE_MODULES = ("triton.language", "triton.runtime.interpreter")
_BRANCHING = (ast.If, ast.IfExp, ast.While, ast.For, ast.BoolOp, ast.Assert, ast.Try, ast.With, ast.Match)


@functools.lru_cache(maxsize=None)
def _straight_line(fn) -> bool:
    """Whether the Python function `fn` (a combine function's) runs the same operations on a block
    as on a scalar: no branching statement or expression, and every call one of triton.language's
    (or the interpreter's stand-in) or of a `triton.jit` function that is straight-line too."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    for node in ast.walk(tree.body[0]):
        if isinstance(node, _BRANCHING) or isinstance(node, (ast.Lambda, ast.FunctionDef)) and node is not tree.body[0]:
            return False
        if isinstance(node, ast.Call):
            try:
                callee = eval(compile(ast.Expression(node.func), "<combine>", "eval"), fn.__globals__)
            except Exception:  # noqa: BLE001 - a callee not named from the function's globals
                return False
            module = getattr(callee, "__module__", None) or ""
            inner = getattr(callee, "fn", None)
            if not module.startswith(_ELEMENTWISE_MODULES) and not (callable(inner) and _straight_line(inner)):
                return False
    return True


def _combine_blocks(ops, left: list, right: list, dtypes: list) -> list:
    """The combine function of `ops` (a reduce or scan) applied to whole blocks: `left` and
    `right` hold one array per operand, of one shape; one array per operand back, in its dtype."""
    import numpy as np
    import triton.language as tl

    combined = ops.combine_fn.fn(*[ops.to_tensor(v, dtype) for v, dtype in zip(left, dtypes)],
                                 *[ops.to_tensor(v, dtype) for v, dtype in zip(right, dtypes)])
    combined = combined if isinstance(combined, tuple) else (combined,)
    return [np.broadcast_to(c.handle.data if isinstance(c, tl.core.tensor) else c, v.shape).astype(v.dtype)
            for c, v in zip(combined, left)]


def _reduce_and_scan_pairwise(interpreter) -> None:
    import numpy as np

    reduce_one_by_one = interpreter.ReduceOps.generic_reduce
    scan_one_by_one = interpreter.ScanOps.generic_scan

    def reduce_pairwise(ops, input):
        """Each step combines elements 2i and 2i+1 of the axis (a block's extent is a power of two)."""
        flat_axis = ops.axis is None  # every operand flattened (the interpreter's unravel flattens the first alone)
        axis = 0 if flat_axis else ops.axis
        dtypes = [arg.dtype for arg in input]
        values = [arg.handle.data.reshape(-1) if flat_axis else np.moveaxis(arg.handle.data, axis, 0) for arg in input]
        while values[0].shape[0] > 1:
            values = _combine_blocks(ops, [v[0::2] for v in values], [v[1::2] for v in values], dtypes)
        out = []
        for data, dtype in zip(values, dtypes):
            data = data[0]
            if ops.keep_dims:
                data = np.expand_dims(data, 0 if flat_axis else axis)
            elif flat_axis:
                data = data.item()
            out.append(ops.to_tensor(data, dtype))
        return out

    def scan_pairwise(ops, input):
        """Step k makes element i the combination of elements i - 2^(k+1) + 1 .. i (fewer at the
        start): it combines element i - 2^k, which holds the 2^k before i's own, with element i.
        Blocks keep their power-of-two extent: the first 2^k elements, which keep their values, are
        combined with themselves and the results dropped."""
        dtypes = [arg.dtype for arg in input]
        values = [np.moveaxis(arg.handle.data, ops.axis, 0) for arg in input]
        extent, step = values[0].shape[0], 1
        while step < extent:
            before = [np.concatenate([v[:step], v[:extent - step]]) for v in values]
            combined = _combine_blocks(ops, before, values, dtypes)
            values = [np.concatenate([v[:step], c[step:]]) for c, v in zip(combined, values)]
            step *= 2
        return [ops.to_tensor(np.moveaxis(v, 0, ops.axis), dtype) for v, dtype in zip(values, dtypes)]

    def generic_reduce(ops, input):
        return reduce_pairwise(ops, input) if _straight_line(ops.combine_fn.fn) else reduce_one_by_one(ops, input)

    def generic_scan(ops, input):
        return scan_pairwise(ops, input) if _straight_line(ops.combine_fn.fn) else scan_one_by_one(ops, input)

    interpreter.ReduceOps.generic_reduce = generic_reduce
    interpreter.ScanOps.generic_scan = generic_scan


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
