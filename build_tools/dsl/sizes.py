"""Which host values are tensor sizes, so that `hl.specialize` of a size can make that size a
compile-time constant of the kernel (and of no value that merely equals it, e.g. a scalar argument)."""
from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from . import language as hl


class SizeTracker:
    """Follows host statements in order: names bound to tensor sizes (`m, n = x.size()`,
    `d = x.shape[-1]`, `d = hl.specialize(d)`) and the values of specialized sizes."""

    def __init__(self, evaluate: Callable[[ast.AST], Any]):
        self.evaluate = evaluate  # a host expression's value, None when it cannot be evaluated
        self.size_names: set[str] = set()
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

    def before(self, stmt: ast.stmt) -> None:
        """Call before executing host statement `stmt`."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and node.args and self.evaluate(node.func) is hl.specialize and self.is_size(node.args[0]):
                value = self.evaluate(node.args[0])
                values = value if isinstance(value, (tuple, list, torch.Size)) else [value]
                self.specialized.update(int(v) for v in values)
        if isinstance(stmt, ast.Assign):
            names = {n.id for target in stmt.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            if self.is_size(stmt.value):
                self.size_names |= names
            else:
                self.size_names -= names
