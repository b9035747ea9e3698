"""Atomics and cross-program synchronization for the device compiler.

- `hl.atomic_add` / `atomic_and` / `atomic_or` / `atomic_xor` / `atomic_max` / `atomic_min` /
  `atomic_xchg(t, index, value, sem=)` combine `value` into `t[index]` atomically, and
  `hl.atomic_cas(t, index, expected, value, sem=)` stores `value` where the entry equals
  `expected`; each returns the previous values.
- `hl.signal(pad, index, signal=1, wait_for=None, op="atomic_xchg", sem="release", scope="gpu",
  skip_sync=False)` publishes: a barrier of the program's threads (so their earlier stores are
  ordered before it, unless `skip_sync`), then one atomic on the pad (`atomic_add`, `atomic_xchg`,
  or `atomic_cas` from `wait_for`, spun until it succeeds); returns the pad's previous values.
- `hl.wait(pad, index, signal=1, update=None, op="ld", sem="acquire", scope="gpu", skip_sync=False)`
  spins until the pad's scalar entry equals `signal` (an acquire read, or with `op="atomic_cas"`
  a compare-and-swap to `update`), then a barrier, so every thread of the program reads what the
  signalling programs stored before their release.

These are Helion's names and arguments. A kernel that waits for other programs of its own launch
is only correct when those programs run concurrently: on a GPU they must be resident at once (the
kernel's author bounds how many programs one waits for; taking work items from an atomic ticket,
not the program id, keeps that true whatever order the hardware starts programs in), and Triton's
CPU interpreter, which runs programs one after another, must run them in threads
(`helion_kernels._interpreter`; the generated kernel carries the flag it reads).
"""
from __future__ import annotations

import ast
from typing import Any

import torch

from . import exc
from .values import HostScalar, HostTensor, TVal, tl_dtype

ATOMIC_FUNCTIONS = {op: f"tl.{op}" for op in ("atomic_add", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor",
                                                "atomic_max", "atomic_min")}
BITWISE_ATOMICS = ("atomic_and", "atomic_or", "atomic_xor")
SIGNAL_OPS = ("atomic_add", "atomic_xchg", "atomic_cas")
SIGNAL_SEMS = ("relaxed", "release", "acq_rel")
WAIT_OPS = ("ld", "atomic_cas")
WAIT_SEMS = ("relaxed", "acquire", "acq_rel")
ATOMIC_SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("gpu", "sys", "cta")
# The attribute of a generated kernel's function that asks Triton's interpreter to run its programs
# concurrently (read by helion_kernels._interpreter).
CONCURRENT_PROGRAMS_FLAG = "hk_concurrent_programs"


class SyncMixin:
    def _check_choice(self, what: str, value: Any, allowed: tuple, node: ast.AST) -> None:
        if value not in allowed:
            raise self.error(exc.NotSupported, f"{what}={value!r}; expected one of {', '.join(map(repr, allowed))}", node)

    def _scalar_operand(self, value: Any, what: str, node: ast.AST) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, HostScalar, TVal)):
            raise self.error(exc.TypeMismatch, f"{what} must be an integer, got {type(value).__name__}", node)
        if isinstance(value, TVal) and value.shape != ():
            raise self.error(exc.ShapeMismatch, f"{what} must be a scalar", node)
        return self.atom(value)

    def _atomic_address(self, tensor: HostTensor, index: list, node: ast.AST) -> tuple:
        """(pointer expression, mask or None, address) of an atomic on `tensor[index]`."""
        addr = self.address(tensor, index, node)
        if any(getattr(d, "looped", False) for d in addr.shape):
            raise self.error(exc.NotSupported, "an atomic over a looped reduction dimension; use a persistent reduction", node)
        atoms = [self.atom(c) for c in addr.children]
        offset, mask = self.render_address(addr, atoms, None, self.index_width(tensor))
        return f"{tensor.param} + ({offset})", mask, addr

    def _check_atomic_dtype(self, op: str, dtype: torch.dtype, node: ast.AST) -> None:
        """The element types Triton's atomics take: 32- and 64-bit ones, 16-bit floats for
        atomic_add (and 16-bit elements for atomic_cas), integers for the bitwise ones, and 32-
        and 64-bit floats or integers for atomic_max / atomic_min."""
        bits = torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits if dtype != torch.bool else 1
        if dtype.is_complex or bits < 16 or (bits == 16 and not (op == "atomic_cas" or (op == "atomic_add" and dtype.is_floating_point))):
            wanted = "32- or 64-bit elements, float16/bfloat16 for atomic_add, 16-bit ones for atomic_cas"
        elif op in BITWISE_ATOMICS and dtype.is_floating_point:
            wanted = "integer elements"
        else:
            return
        raise self.error(exc.TypeMismatch, f"hl.{op} on a {dtype} tensor: it takes {wanted}", node)

    def _atomic_operand(self, value: Any, dtype: torch.dtype, shape: tuple, node: ast.AST) -> str:
        """`value` as an operand of an atomic on elements of `dtype` at `shape`."""
        value = self.fit_value(value, shape, node)
        val = self.atom(value)
        if value.dtype != dtype:
            val = f"{val}.to({tl_dtype(dtype)})"
        if value.shape and len(value.shape) < len(shape):
            val = self.expand_to(TVal(dtype, value.shape, name=val), shape)
        return val

    def atomic(self, op: str, tensor: HostTensor, index: list, value: Any, node: ast.AST,
               sem: str = "relaxed", scope: str = "gpu") -> TVal:
        """`op` (a key of ATOMIC_FUNCTIONS) of `value` into `tensor[index]`; the previous values."""
        self._check_choice("sem", sem, ATOMIC_SEMS, node)
        self._check_choice("scope", scope, SCOPES, node)
        self._check_atomic_dtype(op, tensor.meta.dtype, node)
        pointer, mask, addr = self._atomic_address(tensor, index, node)
        val = self._atomic_operand(value, tensor.meta.dtype, addr.shape, node)
        masked = f", mask={mask}" if mask else ""
        float_exchange = op == "atomic_xchg" and tensor.meta.dtype.is_floating_point
        if float_exchange:  # an exchange moves bits: floats go as integers of their width (the same
            # instruction, which Triton's interpreter also runs)
            bits = f"tl.int{torch.finfo(tensor.meta.dtype).bits}"
            pointer, val = f"({pointer}).to(tl.pointer_type({bits}))", f"({val}).to({bits}, bitcast=True)"
        expr = f"{ATOMIC_FUNCTIONS[op]}({pointer}, {val}{masked}, sem={sem!r}, scope={scope!r})"
        if float_exchange:
            expr = f"{expr}.to({tl_dtype(tensor.meta.dtype)}, bitcast=True)"
        return TVal(tensor.meta.dtype, addr.shape, name=self.builder.assign(expr, "old"))

    def atomic_cas(self, tensor: HostTensor, index: list, expected: Any, value: Any, node: ast.AST,
                   sem: str = "relaxed") -> TVal:
        """`hl.atomic_cas`: `value` stored into `tensor[index]` where the entry equals `expected`;
        the previous values. Triton's compare-and-swap takes no mask, so lanes past the tensor's
        bounds compare the tensor's first element with 0 and store 0 where it is 0, which changes
        nothing."""
        self._check_choice("sem", sem, ATOMIC_SEMS, node)
        self._check_atomic_dtype("atomic_cas", tensor.meta.dtype, node)
        pointer, mask, addr = self._atomic_address(tensor, index, node)
        expect = self._atomic_operand(expected, tensor.meta.dtype, addr.shape, node)
        val = self._atomic_operand(value, tensor.meta.dtype, addr.shape, node)
        sizes = ", ".join(d.size_expr for d in addr.shape)
        if mask:
            zero = f"tl.zeros([{sizes}], {tl_dtype(tensor.meta.dtype)})"
            pointer = f"tl.where({mask}, {pointer}, {tensor.param})"
            expect, val = f"tl.where({mask}, {expect}, {zero})", f"tl.where({mask}, {val}, {zero})"
        elif addr.shape:  # Triton's compare-and-swap takes operands of the pointers' shape (no broadcast)
            expect, val = f"tl.broadcast_to({expect}, [{sizes}])", f"tl.broadcast_to({val}, [{sizes}])"
        expr = f"tl.atomic_cas({pointer}, {expect}, {val}, sem={sem!r})"
        return TVal(tensor.meta.dtype, addr.shape, name=self.builder.assign(expr, "old"))

    def _scalar_pad(self, pad: HostTensor, index: list, what: str, node: ast.AST) -> str:
        pointer, _, addr = self._atomic_address(pad, index, node)
        if addr.shape:
            raise self.error(exc.NotSupported, f"hl.{what} on a tile of the signal pad; index one entry", node)
        if pad.meta.dtype.is_floating_point or pad.meta.dtype.is_complex:
            raise self.error(exc.TypeMismatch, f"hl.{what} needs an integer signal pad, got {pad.meta.dtype}", node)
        return pointer

    def signal(self, pad: HostTensor, index: list, node: ast.AST, signal: Any = 1, wait_for: Any = None,
               op: str = "atomic_xchg", sem: str = "release", scope: str = "gpu", skip_sync: bool = False) -> TVal:
        self._check_choice("op", op, SIGNAL_OPS, node)
        self._check_choice("sem", sem, SIGNAL_SEMS, node)
        self._check_choice("scope", scope, SCOPES, node)
        if (op == "atomic_cas") != (wait_for is not None):
            raise self.error(exc.NotSupported, "hl.signal takes wait_for with op='atomic_cas' only, and needs it there", node)
        pointer = self._scalar_pad(pad, index, "signal", node)
        value = self._scalar_operand(signal, "signal", node)
        b = self.builder
        if not skip_sync:
            b.emit("tl.debug_barrier()")
        if op != "atomic_cas":
            old = b.assign(f"{ATOMIC_FUNCTIONS[op]}({pointer}, {value}, sem={sem!r}, scope={scope!r})", "old")
            return TVal(pad.meta.dtype, (), name=old)
        expect = self._scalar_operand(wait_for, "wait_for", node)
        cas = f"tl.atomic_cas({pointer}, {expect}, {value}, sem={sem!r}, scope={scope!r})"
        old = b.assign(cas, "old")
        b.emit(f"while {old} != {expect}:")
        with b.block():
            b.emit(f"{old} = {cas}")
        self.builder.programs_wait = True
        return TVal(pad.meta.dtype, (), name=old)

    def wait(self, pad: HostTensor, index: list, node: ast.AST, signal: Any = 1, update: Any = None,
             op: str = "ld", sem: str = "acquire", scope: str = "gpu", skip_sync: bool = False) -> None:
        self._check_choice("op", op, WAIT_OPS, node)
        self._check_choice("sem", sem, WAIT_SEMS, node)
        self._check_choice("scope", scope, SCOPES, node)
        if (op == "atomic_cas") != (update is not None):
            raise self.error(exc.NotSupported, "hl.wait takes update with op='atomic_cas' only, and needs it there", node)
        pointer = self._scalar_pad(pad, index, "wait", node)
        expect = self._scalar_operand(signal, "signal", node)
        if op == "ld":  # an atomic read: Triton has no acquire load
            read = f"tl.atomic_add({pointer}, 0, sem={sem!r}, scope={scope!r})"
        else:
            read = f"tl.atomic_cas({pointer}, {expect}, {self._scalar_operand(update, 'update', node)}, sem={sem!r}, scope={scope!r})"
        b = self.builder
        seen = b.assign(read, "seen")
        b.emit(f"while {seen} != {expect}:")
        with b.block():
            b.emit(f"{seen} = {read}")
        if not skip_sync:
            b.emit("tl.debug_barrier()")
        self.builder.programs_wait = True
