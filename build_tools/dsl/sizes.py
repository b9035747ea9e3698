"""Which host values are tensor sizes, so that `hl.specialize` of a size can make that size a
compile-time constant of the kernel (and of no value that merely equals it, e.g. a scalar argument);
and which are >= 0 on every call (sizes and what +, *, //, min, ... compute of them), so that device
integer `//` and `%` on them need no rounding fix (see PointwiseMixin.floored)."""
from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from . import language as hl

# host operators whose result is >= 0 when both operands are (Python's `%` when its divisor is)
NON_NEGATIVE_OPS = (ast.Add, ast.Mult, ast.FloorDiv, ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift, ast.Pow)
NON_NEGATIVE_METHODS = ("size", "stride", "numel", "element_size", "dim")


class SizeTracker:
    """Follows host statements in order: names bound to tensor sizes (`m, n = x.size()`,
    `d = x.shape[-1]`, `d = hl.specialize(d)`) and the values of specialized sizes."""

    def __init__(self, evaluate: Callable[[ast.AST], Any], compile_time: Callable[[ast.AST], bool]):
        self.evaluate = evaluate  # a host expression's value, None when it cannot be evaluated
        self.compile_time = compile_time  # whether its value is the same on every call the kernel serves
        self.size_names: set[str] = set()
        self.non_negative_names: set[str] = set()
        self.specialized: set[int] = set()

    def is_size(self, node: ast.AST) -> bool:
        """Whether `node` evaluates to a tensor size or a tuple of tensor sizes."""
        if isinstance(node, ast.Name):
            return node.id in self.size_names
        if isinstance(node, ast.Subscript):
            return self.is_size(node.value)
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            return isinstance(self.evaluate(node.value), torch.Tensor)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
            return isinstance(self.evaluate(node.func.value), torch.Tensor)
        if isinstance(node, ast.Call) and node.args and self.evaluate(node.func) is hl.specialize:
            return self.is_size(node.args[0])
        return False

    def is_non_negative(self, node: ast.AST) -> bool:
        """Whether `node` is >= 0 on every call: a tensor size, stride or element count, a block size,
        a compile-time value >= 0 (a block size, a tunable), a non-negative constant, or +, *, //, %,
        min, max, len, int, cdiv or next_power_of_2 of such."""
        if self.is_size(node):
            return True
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and node.value >= 0
        if isinstance(node, ast.Name):  # a name bound to such a value, or to a compile-time one (a tunable) >= 0
            value = self.evaluate(node)
            return node.id in self.non_negative_names or (
                isinstance(value, (int, float)) and self.compile_time(node) and value >= 0)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mod):
                return self.is_non_negative(node.right)
            return isinstance(node.op, NON_NEGATIVE_OPS) and self.is_non_negative(node.left) and self.is_non_negative(node.right)
        if isinstance(node, ast.IfExp):
            return self.is_non_negative(node.body) and self.is_non_negative(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.is_non_negative(e) for e in node.elts)
        if isinstance(node, ast.Subscript):
            return isinstance(node.value, (ast.Tuple, ast.List)) and self.is_non_negative(node.value)
        if isinstance(node, ast.Call) and not node.keywords:
            fn = self.evaluate(node.func)
            args = [self.is_non_negative(a) for a in node.args]
            if fn is len:
                return True
            if fn is max:
                return any(args)
            if fn in (min, int) or getattr(fn, "__name__", "") in ("cdiv", "next_power_of_2"):
                return bool(args) and all(args)
            return (isinstance(node.func, ast.Attribute) and node.func.attr in NON_NEGATIVE_METHODS
                    and isinstance(self.evaluate(node.func.value), torch.Tensor))
        return False

    def bound_non_negative(self, stmt: ast.stmt) -> None:
        """Follows host statement `stmt` (before it runs) for the names it binds to values >= 0."""
        stored = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        known: set[str] = set()
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                known |= self.non_negative_targets(target, stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            combined = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
            if self.is_non_negative(combined):
                known.add(stmt.target.id)
        self.non_negative_names = (self.non_negative_names - stored) | known

    def non_negative_targets(self, target: ast.AST, value: ast.AST) -> set[str]:
        if isinstance(target, ast.Name):
            return {target.id} if self.is_non_negative(value) else set()
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                return set().union(*(self.non_negative_targets(t, v) for t, v in zip(target.elts, value.elts)))
            if self.is_size(value) and not any(isinstance(t, ast.Starred) for t in target.elts):
                return {t.id for t in target.elts if isinstance(t, ast.Name)}
        return set()

    def before(self, stmt: ast.stmt) -> None:
        """Call before executing host statement `stmt`."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and node.args and self.evaluate(node.func) is hl.specialize and self.is_size(node.args[0]):
                value = self.evaluate(node.args[0])
                values = value if isinstance(value, (tuple, list, torch.Size)) else [value]
                self.specialized.update(int(v) for v in values)
        self.bound_non_negative(stmt)
        if isinstance(stmt, ast.Assign):
            names = {n.id for target in stmt.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            if self.is_size(stmt.value):
                self.size_names |= names
            else:
                self.size_names -= names
