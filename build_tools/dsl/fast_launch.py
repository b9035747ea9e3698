"""Routes a generated launcher's launches through the helpers of `launch_helpers`: the source text
those helpers carry into every generated module, and the rewrite of launcher lines that uses them."""
from __future__ import annotations

import ast
import inspect

from . import exc, launch_helpers
from .launcher_prune import prune_launcher
from .native_launch import SOURCE as NATIVE_LAUNCH_SOURCE

HOST_FUNCTIONS = {("triton", "cdiv"): "_cdiv", ("triton", "next_power_of_2"): "_next_power_of_2"}
# allocations whose size may be given as separate ints: torch's argument parser takes ints about
# 0.8 µs faster per call than a tuple or list of them (measured on CPU tensors, torch 2.13)
SIZED_FUNCTIONS = {("torch", "empty"), ("torch", "zeros"), ("torch", "ones")}
SIZED_METHODS = {"new_empty", "new_zeros", "new_ones"}
OPTIONS = ("num_warps", "num_stages")


def _code_after_imports(module) -> str:
    source = inspect.getsource(module)
    tree = ast.parse(source)
    first = next(node for node in tree.body[1:] if not isinstance(node, (ast.Import, ast.ImportFrom)))
    return "".join(source.splitlines(keepends=True)[first.lineno - 1:])


def _source_literal(name: str, text: str) -> str:
    """The assignment of `text` to `name` as a raw triple-quoted literal, as a generated module carries it."""
    if '"""' in text or text.endswith("\\"):
        raise exc.NotSupported(f"internal: {name} cannot be written as a raw triple-quoted literal")
    return f'{name} = r"""{text}"""\n\n'


LAUNCH_HELPERS = _source_literal("_NATIVE_LAUNCH_SOURCE", NATIVE_LAUNCH_SOURCE) + _code_after_imports(launch_helpers)


class _Rewriter(ast.NodeTransformer):
    """`kernel[grid](args, C=v, num_warps=w, num_stages=s)` -> `_launch(kernel, grid, (args,), (v,), w, s)`
    with the constexprs in signature order; `triton.cdiv`/`triton.next_power_of_2` -> the plain helpers;
    `torch.empty((a, b), ...)` / `x.new_empty([a, b], ...)` (and zeros, ones) -> the sizes as separate
    arguments; `x.new_empty(..., dtype=d)` -> the helpers' `_new_empty`."""

    def __init__(self, constexprs: dict):
        self.constexprs = constexprs

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in self.constexprs:
            keywords = {k.arg: k.value for k in node.keywords}
            names = self.constexprs[func.value.id]
            if sorted(keywords) != sorted(names + list(OPTIONS)):
                raise exc.NotSupported(f"internal: launch of {func.value.id} passes {sorted(keywords)}, "
                                       f"its constexprs are {names}")
            constants = ast.Tuple([keywords[name] for name in names], ast.Load())
            options = [keywords[name] for name in OPTIONS]
            return ast.Call(ast.Name("_launch", ast.Load()),
                            [func.value, func.slice, ast.Tuple(node.args, ast.Load()), constants, *options], [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and (func.value.id, func.attr) in HOST_FUNCTIONS:
            node.func = ast.Name(HOST_FUNCTIONS[(func.value.id, func.attr)], ast.Load())
        elif _sized_allocation(node):
            node.args = list(node.args[0].elts)
        return _allocation(node) or node


def _sized_allocation(node: ast.Call) -> bool:
    """Whether `node` allocates with its size as one literal tuple or list of at least one item."""
    func = node.func
    if not isinstance(func, ast.Attribute) or len(node.args) != 1:
        return False
    if func.attr not in SIZED_METHODS and not (isinstance(func.value, ast.Name)
                                               and (func.value.id, func.attr) in SIZED_FUNCTIONS):
        return False
    size = node.args[0]
    return isinstance(size, (ast.Tuple, ast.List)) and bool(size.elts) \
        and not any(isinstance(item, ast.Starred) for item in size.elts)


def _allocation(node: ast.Call):
    """`t.new_empty(*sizes, dtype=d)` -> `_new_empty(t, d, *sizes)` (launch_helpers' allocation; `t.dtype`
    for d where the call gives none and t is a name); None for any other call or form."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "new_empty" or not node.args \
            or any(isinstance(arg, ast.Starred) for arg in node.args):
        return None
    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
    if list(keywords) == ["dtype"]:
        dtype = keywords["dtype"]
    elif not keywords and isinstance(func.value, ast.Name):
        dtype = ast.Attribute(ast.Name(func.value.id, ast.Load()), "dtype", ast.Load())
    else:
        return None
    return ast.Call(ast.Name("_new_empty", ast.Load()), [func.value, dtype, *node.args], [])


def _tensor_query(node: ast.AST):
    """(tensor name, method) of a `name.stride(i)` / `name.size(i)` call with a constant i, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("stride", "size") \
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1 and not node.keywords \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
        return node.func.value.id, node.func.attr
    return None


class _Hoist(ast.NodeTransformer):
    """Replaces the queries of `hoisted` ((tensor, method) -> variable) by indexing that variable."""

    def __init__(self, hoisted: dict):
        self.hoisted = hoisted

    def visit_Call(self, node: ast.Call) -> ast.AST:
        query = _tensor_query(node)
        if query in self.hoisted:
            return ast.Subscript(ast.Name(self.hoisted[query], ast.Load()), node.args[0], ast.Load())
        self.generic_visit(node)
        return node


def _hoist_queries(statement: ast.stmt, taken: set) -> list:
    """A `_launch` statement preceded by one `x.stride()` / `x.size()` per tensor whose strides or
    sizes it reads more than once (one call instead of one per dimension)."""
    uses = {}
    for node in ast.walk(statement):
        query = _tensor_query(node)
        if query is not None:
            uses[query] = uses.get(query, 0) + 1
    hoisted, before = {}, []
    for (tensor, method), count in sorted(uses.items()):
        if count < 2:
            continue
        name = f"{tensor}_{method}s"
        while name in taken:
            name = "_" + name
        taken.add(name)
        hoisted[(tensor, method)] = name
        before.append(ast.Assign([ast.Name(name, ast.Store())],
                                 ast.Call(ast.Attribute(ast.Name(tensor, ast.Load()), method, ast.Load()), [], [])))
    return before + [_Hoist(hoisted).visit(statement)]


def _is_launch(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
        and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "_launch"


def rewrite_launches(lines: list, constexprs: dict) -> list:
    """Launcher lines with every launch of a kernel in `constexprs` (kernel name -> its constexpr
    parameter names, in signature order) going through `_launch`, without the launches over
    provably empty grids and what only they used (`launcher_prune`), reading each tensor's strides
    and sizes once per launch, allocations given their sizes as separate ints, `new_empty` made
    through the helpers' `_new_empty`."""
    if not lines:
        return lines
    tree = _Rewriter(constexprs).visit(ast.parse("\n".join(lines)))
    tree.body = prune_launcher(tree.body)
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    body = []
    for statement in tree.body:
        body += _hoist_queries(statement, taken) if _is_launch(statement) else [statement]
    tree.body = body
    return ast.unparse(ast.fix_missing_locations(tree)).splitlines()
