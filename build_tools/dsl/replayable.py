"""Which generated launchers a direct call may record once and then replay natively (the
generated modules' `REPLAYABLE`; see native_replay and helion_kernels/_direct).

A launcher is replayable when, for fixed argument properties (the tensors' dtypes, devices, sizes,
strides and 16-byte alignment, and the other arguments' values), every call allocates the same
tensors and launches the same kernels with the same grids and scalar arguments, so that only the
pointers change. That holds when its host code only reads sizes, strides and alignments, does
integer arithmetic, allocates (`_new_empty`, `torch.empty`, `torch.empty_like`), takes the
stream's counter buffer (`_counters`) and launches (`_launch`): no other call (no host reduction, cast or copy, no counter buffer, no device
descriptor, no random seed drawn per call by `_rng_seed`, which a replay would repeat), a data pointer only as its remainder modulo 16, and no loop, `with`, `try`, `global`
or import. Views and tensors from elsewhere are caught when the call is recorded (every launched
tensor must be an argument or an allocation).
"""
from __future__ import annotations

import ast

PURE_FUNCTIONS = frozenset({"_launch", "_new_empty", "_cdiv", "_next_power_of_2", "_num_sms", "_dependent_launch",
                            "_xyz_grid", "max", "min", "len",
                            # the stream's zeroed counters: the recording holds the buffer and the
                            # replay checks the stream (native_replay)
                            "_counters"})
TORCH_ALLOCATIONS = frozenset({"empty", "empty_like"})
TENSOR_QUERIES = frozenset({"size", "stride"})
STATEMENTS = (ast.Assign, ast.Return, ast.Expr, ast.If, ast.Pass)


def _allowed_call(call: ast.Call, parent: ast.AST | None) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in PURE_FUNCTIONS
    if not isinstance(func, ast.Attribute):
        return False
    if isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr in TORCH_ALLOCATIONS
    if func.attr == "data_ptr":
        return (isinstance(parent, ast.BinOp) and parent.left is call and isinstance(parent.op, ast.Mod)
                and isinstance(parent.right, ast.Constant) and parent.right.value == 16)
    return func.attr in TENSOR_QUERIES


def replayable(launcher_source: str) -> bool:
    """Whether the launcher defined by `launcher_source` (one function) is replayable."""
    function = ast.parse(launcher_source).body[0]
    if not isinstance(function, ast.FunctionDef):
        return False
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(function):
        if isinstance(node, ast.stmt) and node is not function and not isinstance(node, STATEMENTS):
            return False
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(node, ast.Call) and not _allowed_call(node, parents.get(node)):
            return False
    return True
