"""Host-side analysis of a kernel function: parsing, splitting host statements from device loops,
evaluating host code on meta tensors, and rewriting host statements into launcher source."""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import math
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch
import triton

from . import exc
from . import language as hl

HOST_TENSOR_METHODS = {"size", "stride", "numel", "dim", "ndimension", "element_size", "is_contiguous", "new_empty"}
# DSL host functions whose launcher form is a helper of the generated module (module.HELPERS)
HOST_HELPERS = {"counters": "_counters"}
SAFE_MODULES = {"torch": torch, "math": math, "triton": triton}


@dataclass
class ParsedKernel:
    fn: Callable
    tree: ast.FunctionDef
    filename: str
    first_line: int
    params: list[str]
    constexpr_params: set
    body: list  # ("host", stmt) or ("device", stmt)
    local_names: set
    globals: dict  # the function's globals plus the variables its closure captured


def parse_kernel(fn: Callable) -> ParsedKernel:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        _, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise exc.NotSupported(f"cannot read the source of kernel {fn.__name__}: {err}") from None
    module = ast.parse(source)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise exc.NotSupported(f"{fn.__name__} is not a plain function")
    ast.increment_lineno(tree, first_line - 1)
    tree.decorator_list = []
    params = [a.arg for a in tree.args.args]
    if tree.args.vararg or tree.args.kwarg:
        raise exc.NotSupported(f"{filename}:{tree.lineno}: *args/**kwargs in kernel signature")
    constexpr_params = set()
    for a in tree.args.args + tree.args.kwonlyargs:
        if a.annotation is not None and "constexpr" in ast.unparse(a.annotation):
            constexpr_params.add(a.arg)
    params += [a.arg for a in tree.args.kwonlyargs]
    namespace = dict(fn.__globals__)
    namespace.update(inspect.getclosurevars(fn).nonlocals)
    body = []
    for stmt in tree.body:
        device = is_device_loop(stmt, namespace)
        body.append(("device", without_continues(stmt)) if device else ("host", stmt))
    local_names = set(params)
    for stmt in tree.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local_names.add(sub.id)
    return ParsedKernel(fn, tree, filename, first_line, params, constexpr_params, body, local_names, namespace)


def without_continues(loop: ast.For) -> ast.For:
    """Device loop `loop` with every `continue` of it and of the loops in it folded into branches:
    an `if` whose branch continues takes the rest of the loop body into its other branch, so
    `if skip: A; continue` then `B` becomes `if skip: A else: B` (the rest is copied into both
    branches where both go on). Triton has no `continue`; Helion's kernels skip a tile's work so."""
    def continues(stmt: ast.stmt) -> bool:  # a `continue` of the enclosing loop, not of a loop within
        if isinstance(stmt, ast.Continue):
            return True
        return isinstance(stmt, ast.If) and any(continues(s) for s in stmt.body + stmt.orelse)

    def folded(stmts: list) -> list:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Continue):
                return stmts[:i]
            if continues(stmt):
                rest = stmts[i + 1:]
                branch = ast.If(stmt.test, folded(stmt.body + copy.deepcopy(rest)) or [ast.Pass()],
                                folded(stmt.orelse + rest))
                return stmts[:i] + [ast.copy_location(branch, stmt)]
        return stmts

    class Loops(ast.NodeTransformer):
        def visit_For(self, node: ast.AST) -> ast.AST:
            self.generic_visit(node)
            node.body = folded(node.body) or [ast.Pass()]
            return node

        visit_While = visit_For

    return ast.fix_missing_locations(Loops().visit(copy.deepcopy(loop)))


def is_device_loop(stmt: ast.stmt, globals_: dict) -> bool:
    if not isinstance(stmt, ast.For) or not isinstance(stmt.iter, ast.Call):
        return False
    try:
        callee = eval(compile(ast.Expression(stmt.iter.func), "<dsl>", "eval"), dict(globals_))
    except Exception:
        return False
    return callee is hl.tile or callee is hl.grid


def find_device_calls(node: ast.AST, globals_: dict) -> ast.AST | None:
    """The first hl.tile/hl.grid call or device loop found in host code (illegal there)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.For) and is_device_loop(sub, globals_):
            return sub
    return None


@functools.lru_cache(maxsize=4096)
def host_statement_code(stmt: ast.stmt, filename: str) -> types.CodeType:
    """The code host analysis runs of the host statement `stmt`, compiled once per statement (a
    kernel's tree is shared and not changed): `stmt` with its nested `return`s made `pass`, since an
    early return (`if flag: return out`) has a test that depends on the call; the launcher keeps the
    return, and the analysis goes on to the loops a call that does not return runs."""
    class Returns(ast.NodeTransformer):
        def visit_Return(self, node: ast.Return) -> ast.AST:
            return ast.copy_location(ast.Pass(), node)

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            return node  # a nested function's returns are its own

        visit_Lambda = visit_AsyncFunctionDef = visit_FunctionDef

    body = ast.fix_missing_locations(Returns().visit(copy.deepcopy(stmt)))
    return compile(ast.Module(body=[body], type_ignores=[]), filename, "exec")


class DeviceReads(torch.overrides.TorchFunctionMode):
    """While host analysis runs a host statement on meta tensors: a number read from a tensor
    (`.item()`, `int(t)`, `float(t)`) has no value there, so it reads a stand-in of its type and
    counts the read in `reads`. The statement's targets are then run-time scalars: the launcher
    runs the statement on the call's tensors (a device sync, as in eager PyTorch) and passes the
    values to the kernels as arguments. An integer reads the tensor's `read_hint` attribute where
    it has one (a NestedTensor argument's longest component: the bound call's), else INT_HINT, a
    size-like hint (as torch's unbacked sizes get) so that a loop over it gets the block sizes of a
    sizable dimension."""

    READS = {torch.Tensor.item, torch.Tensor.__int__, torch.Tensor.__float__}
    INT_HINT = 8192

    def __init__(self):
        super().__init__()
        self.reads = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.READS and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            tensor = args[0]
            if tensor.numel() != 1:
                raise RuntimeError(f"a Tensor with {tensor.numel()} elements cannot be converted to Scalar")
            self.reads += 1
            if func is torch.Tensor.__float__ or (func is torch.Tensor.item and tensor.dtype.is_floating_point):
                return 1.0
            return True if func is torch.Tensor.item and tensor.dtype is torch.bool else \
                getattr(tensor, "read_hint", self.INT_HINT)
        return func(*args, **(kwargs or {}))


class LauncherRewriter(ast.NodeTransformer):
    """Rewrites a host statement for the standalone launcher: hl helpers become their values,
    helion.cdiv/next_power_of_2 become triton's, helion.counters the module's `_counters`, and
    module-level constants are inlined."""

    def __init__(self, session: Any, env: dict):
        self.session = session
        self.env = env

    def visit_Call(self, node: ast.Call) -> ast.AST:
        callee = self.session.try_eval(node.func, self.env)
        if callee is hl.register_block_size or callee is hl.register_tunable:
            value = self.session.try_eval(node, self.env, replay=True)
            return ast.copy_location(ast.Constant(int(value) if isinstance(value, int) and not isinstance(value, bool) else value), node)
        if callee is hl.specialize or callee is hl.register_reduction_dim:
            return self.visit(node.args[0])
        if callee is hl.barrier:
            return ast.copy_location(ast.Constant(None), node)
        name = getattr(callee, "__name__", "")
        if getattr(callee, "__module__", "") == "build_tools.dsl" and name in ("cdiv", "next_power_of_2", *HOST_HELPERS):
            node.func = ast.Name(HOST_HELPERS[name], ast.Load()) if name in HOST_HELPERS else \
                ast.Attribute(ast.Name("triton", ast.Load()), name, ast.Load())
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        if callee in hl.DEVICE_FUNCTIONS:
            raise exc.NotSupported(f"hl.{callee.__name__} outside a device loop", self.session.location(node))
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in self.session.nested_args:
            # `x.size(1)` of a NestedTensor argument: the launcher's view of it (nested.py)
            node.value = ast.copy_location(ast.Name(self.session.nested_args[node.value.id], ast.Load()), node.value)
            return node
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.session.parsed.local_names or not isinstance(node.ctx, ast.Load):
            return node
        globals_ = self.session.parsed.globals
        if node.id in SAFE_MODULES and globals_.get(node.id, SAFE_MODULES[node.id]) is SAFE_MODULES[node.id]:
            return node
        if node.id not in globals_ and hasattr(builtins, node.id):
            return node
        value = globals_.get(node.id)
        if isinstance(value, (int, float, bool, str)) or value is None:
            return ast.copy_location(ast.Constant(value), node)
        if isinstance(value, torch.dtype):
            return ast.copy_location(ast.parse(str(value), mode="eval").body, node)
        if value is torch or value is math or value is triton:
            return ast.copy_location(ast.Name(value.__name__, ast.Load()), node)
        raise exc.NotSupported(
            f"host code uses global {node.id!r} ({type(value).__name__}), which cannot be embedded in the generated launcher",
            self.session.location(node),
        )
