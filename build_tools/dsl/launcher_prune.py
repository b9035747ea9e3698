"""Drops from a launcher the launches over a provably empty grid (a pass that its config switches
off), writes the values that fold into the statements left, then drops the pure statements whose
results nothing reads any more (the buffers, sizes and strides only those launches used, the
config's constants), so a call neither allocates nor queries nor computes for them.

A grid is provably empty when a factor of one of its dimensions folds to 0 from constants:
literals (integers, booleans, and strings such as a config's enum choice, which only compare), names the launcher assigns once, at its top level, from a foldable expression (read
after that assignment), conditional expressions on a folded test, `and`/`or` (decided by their
folded operands, as Python short-circuits them), comparisons and integer arithmetic of folded
values, and `_cdiv`, `_next_power_of_2`, `min` and `max` of folded values; or when it is a sum of
integer names assigned once with coefficients that cancel (`m - split_m` after `split_m = m`, as a
split-K pass over every row leaves the unsplit pass none), or `_cdiv` of such a zero. A statement is dropped only when
every expression in it is pure: no call but the host helpers, tensor allocations and queries and
non-mutating tensor methods (a reduction of a buffer that only a dropped pass wrote), no
assignment expression, lambda or comprehension. `_launch` still returns at once on a grid that
turns out empty at run time; this only removes what is known before."""
from __future__ import annotations

import ast

# `_rng_seed` draws a launch's seed: a draw only a dropped launch reads goes with it
PURE_FUNCTIONS = frozenset({"_cdiv", "_next_power_of_2", "_counters", "_xyz_grid", "_num_sms", "_dependent_launch",
                            "_new_empty", "_rng_seed", "len", "min", "max"})
# Tensor methods and torch functions that only read their operands and return new values (host
# values are sizes and tensors); what ends in "_" mutates and is never here.
PURE_METHODS = frozenset({"stride", "size", "dim", "numel", "element_size", "new_empty", "new_zeros",
                          "new_full", "sum", "mean", "amax", "amin", "to", "float", "view", "reshape",
                          "contiguous", "transpose", "permute", "unsqueeze", "squeeze", "flatten", "expand"})
PURE_TORCH = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like"})
IMPURE = (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.ListComp, ast.SetComp,
          ast.DictComp, ast.GeneratorExp)
UNKNOWN = object()
COMPARISONS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
               ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def _pure_call(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in PURE_FUNCTIONS
    if not isinstance(func, ast.Attribute):
        return False
    if isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr in PURE_TORCH
    return func.attr in PURE_METHODS


def _pure(node: ast.AST) -> bool:
    return all(not isinstance(n, IMPURE) and (not isinstance(n, ast.Call) or _pure_call(n)) for n in ast.walk(node))


def _fold_call(name: str, values: list):
    if name == "_cdiv" and len(values) == 2 and values[1] != 0:
        return (values[0] + values[1] - 1) // values[1]
    if name == "_next_power_of_2" and len(values) == 1:
        return 1 << (values[0] - 1).bit_length() if values[0] > 0 else 0
    if name in ("min", "max") and values:
        return min(values) if name == "min" else max(values)
    return UNKNOWN


def _fold(node: ast.AST, env: dict):
    """The constant value of `node` given the constant names in `env`, or UNKNOWN."""
    if isinstance(node, ast.Constant):  # strings too: a config's enum choices compare by value
        return node.value if isinstance(node.value, (bool, int, str)) else UNKNOWN
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, ast.IfExp):
        test = _fold(node.test, env)
        return UNKNOWN if test is UNKNOWN else _fold(node.body if test else node.orelse, env)
    if isinstance(node, ast.BoolOp):
        # `a and b` is the first falsy operand (or the last); `a or b` the first truthy one: an
        # unknown operand before the deciding one leaves the result unknown
        stop_on_falsy = isinstance(node.op, ast.And)
        value = UNKNOWN
        for operand in node.values:
            value = _fold(operand, env)
            if value is UNKNOWN or bool(value) != stop_on_falsy:
                return value
        return value
    if isinstance(node, ast.Compare):
        left = _fold(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _fold(right_node, env)
            if UNKNOWN in (left, right) or type(op) not in COMPARISONS \
                    or isinstance(left, str) != isinstance(right, str):  # a string compares with strings only
                return UNKNOWN
            if not COMPARISONS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        value = _fold(node.operand, env)
        if isinstance(node.op, ast.Not):
            return UNKNOWN if value is UNKNOWN else not value
        return -value if isinstance(value, int) else UNKNOWN
    if isinstance(node, ast.BinOp):
        left, right = _fold(node.left, env), _fold(node.right, env)
        if not (isinstance(left, int) and isinstance(right, int)):
            return UNKNOWN
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right != 0:
            return left // right if isinstance(node.op, ast.FloorDiv) else left % right
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        values = [_fold(arg, env) for arg in node.args]
        return _fold_call(node.func.id, values) if all(isinstance(v, int) for v in values) else UNKNOWN
    return UNKNOWN


def _affine(node: ast.AST, env: dict, symbols: dict):
    """`node` as an integer affine form {name: coefficient, None: constant} over the names in
    `symbols` (integer names assigned once, each mapped to its own form), or UNKNOWN."""
    value = _fold(node, env)
    if value is not UNKNOWN:
        return {None: int(value)} if isinstance(value, int) else UNKNOWN
    if isinstance(node, ast.Name):
        return symbols.get(node.id, UNKNOWN)
    if isinstance(node, ast.IfExp):
        test = _fold(node.test, env)
        return UNKNOWN if test is UNKNOWN else _affine(node.body if test else node.orelse, env, symbols)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        form = _affine(node.operand, env, symbols)
        return UNKNOWN if form is UNKNOWN else _scaled(form, -1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _affine(node.left, env, symbols), _affine(node.right, env, symbols)
        if UNKNOWN in (left, right):
            return UNKNOWN
        if isinstance(node.op, ast.Mult):
            constant = right if set(right) <= {None} else left if set(left) <= {None} else None
            if constant is None:
                return UNKNOWN
            return _scaled(left if constant is right else right, constant.get(None, 0))
        total = dict(left)
        sign = 1 if isinstance(node.op, ast.Add) else -1
        for name, coefficient in right.items():
            total[name] = total.get(name, 0) + sign * coefficient
        return {name: c for name, c in total.items() if c != 0}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_cdiv" \
            and len(node.args) == 2 and _affine(node.args[0], env, symbols) == {}:
        divisor = _fold(node.args[1], env)
        return {} if isinstance(divisor, int) and divisor > 0 else UNKNOWN
    return UNKNOWN


def _scaled(form: dict, factor: int) -> dict:
    return {name: c * factor for name, c in form.items() if c * factor != 0}


def _assigned_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    return None


def _zero(dim: ast.AST, env: dict, symbols: dict) -> bool:
    """Whether a grid dimension, a product of factors or a `min` of counts (a persistent loop's
    programs), has a factor or an operand that folds to 0 (counts are never negative)."""
    if isinstance(dim, ast.BinOp) and isinstance(dim.op, ast.Mult):
        return _zero(dim.left, env, symbols) or _zero(dim.right, env, symbols)
    if isinstance(dim, ast.Call) and isinstance(dim.func, ast.Name) and dim.func.id == "min":
        return any(_zero(arg, env, symbols) for arg in dim.args)
    return _fold(dim, env) == 0 or _affine(dim, env, symbols) == {}


def _grid_tuple(node: ast.AST) -> ast.Tuple | None:
    """The dimensions of a grid expression: a tuple, or pid_type "xyz"'s `_xyz_grid(tuple)` (which
    launches that tuple's programs, folded or not)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_xyz_grid" \
            and len(node.args) == 1:
        node = node.args[0]
    return node if isinstance(node, ast.Tuple) else None


def _empty_launch(statement: ast.stmt, env: dict, symbols: dict, grids: dict) -> bool:
    """Whether `statement` is a launch over a provably empty grid; `grids` maps the names of grids
    assigned before it to their expressions."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "_launch"):
        return False
    grid = statement.value.args[1]
    grid = _grid_tuple(grids.get(grid.id) if isinstance(grid, ast.Name) else grid)
    return grid is not None and any(_zero(dim, env, symbols) for dim in grid.elts) \
        and all(_pure(arg) for arg in statement.value.args)


INT_QUERIES = frozenset({"size", "stride", "numel", "dim", "element_size"})


def _int_valued(node: ast.AST, ints: set) -> bool:
    """Whether `node` is an integer by construction: a literal, a name in `ints`, a size or stride
    query, the host helpers or min/max of integers, integer arithmetic or a choice of integers."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in ints
    if isinstance(node, ast.Subscript):  # an element of a sizes or strides tuple
        return isinstance(node.value, ast.Name) and node.value.id in ints
    if isinstance(node, ast.IfExp):
        return _int_valued(node.body, ints) and _int_valued(node.orelse, ints)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _int_valued(node.left, ints) and _int_valued(node.right, ints)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in INT_QUERIES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_cdiv", "_next_power_of_2", "min", "max"):
        return all(_int_valued(arg, ints) for arg in node.args)
    return False


def _int_names(body: list) -> set:
    """Names that every assignment in `body` binds to integers (or to tuples of sizes/strides)."""
    ints, other = set(), set()
    for statement in body:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            value = statement.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Call) \
                    and isinstance(value.func, ast.Attribute) and value.func.attr in ("size", "stride") and not value.args:
                names = [elt.id for elt in target.elts if isinstance(elt, ast.Name)]
                ints.update(names)
            elif isinstance(target, ast.Name) and _int_valued(value, ints):  # x.size() counts too
                ints.add(target.id)
            else:
                other.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return ints - other


class _Substitute(ast.NodeTransformer):
    """Writes the folded values into a statement: an expression that folds becomes its constant, a
    conditional expression on a folded test its taken branch, integer `x + 0`, `x - 0`, `x * 1`
    and `_cdiv(x, 1)` become `x`, and constant operands that cannot decide an `and`/`or` go; the
    assignments of folded names are left for the dead-statement pass."""

    def __init__(self, env: dict, ints: set):
        self.env = env
        self.ints = ints

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant) \
                and not (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)):
            value = _fold(node, self.env)
            if value is not UNKNOWN:
                return ast.copy_location(ast.Constant(value), node)
        return super().visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        test = _fold(node.test, self.env)
        if test is UNKNOWN:
            return self.generic_visit(node)
        return self.visit(node.body if test else node.orelse)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "_cdiv" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == 1 and _int_valued(node.args[0], self.ints):
            return node.args[0]
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        """Drops the operands that cannot decide the result: a constant True before the last
        operand of an `and`, a constant False before the last of an `or`."""
        self.generic_visit(node)
        neutral = isinstance(node.op, ast.And)
        kept = [v for v in node.values[:-1] if not (isinstance(v, ast.Constant) and v.value is neutral)]
        kept.append(node.values[-1])
        if len(kept) == 1:
            return kept[0]
        node.values = kept
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not _int_valued(node, self.ints):
            return node
        left, right = (n.value if isinstance(n, ast.Constant) else None for n in (node.left, node.right))
        if isinstance(node.op, (ast.Add, ast.Sub)) and right == 0:
            return node.left
        if isinstance(node.op, ast.Add) and left == 0:
            return node.right
        if isinstance(node.op, ast.Mult) and 1 in (left, right):
            return node.left if right == 1 else node.right
        return node


def _stored_names(statement: ast.stmt) -> list[str]:
    """The names `statement` assigns, anywhere inside it."""
    return [node.id for node in ast.walk(statement) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]


def prune_launcher(body: list) -> list:
    """The launcher statements `body` without its launches over provably empty grids, then
    without its pure assignments whose names nothing later reads."""
    stores = {}
    for statement in body:
        for stored in _stored_names(statement):
            stores[stored] = stores.get(stored, 0) + 1
    ints = _int_names(body)
    env, symbols, grids, launched = {}, {}, {}, []
    for statement in body:
        if _empty_launch(statement, env, symbols, grids):
            continue
        name = _assigned_name(statement)
        if name is not None and stores[name] == 1:
            value = _fold(statement.value, env)
            if value is not UNKNOWN:
                env[name] = value
        for stored in _stored_names(statement):
            # an integer assigned once is a symbol of the affine forms (its own, or its value's form)
            if stored in ints and stores[stored] == 1 and stored not in env:
                form = _affine(statement.value, env, symbols) if stored == name else UNKNOWN
                symbols[stored] = {stored: 1} if form is UNKNOWN else form
            # a grid name stands for its latest top-level assignment (the launcher's top level is
            # straight-line code); any other store to it forgets it
            grids.pop(stored, None)
        if name is not None and _grid_tuple(statement.value) is not None:
            grids[name] = statement.value
        launched.append(statement)
    launched = [_Substitute(env, ints).visit(statement) for statement in launched]
    live, kept = set(), []
    for statement in reversed(launched):
        name = _assigned_name(statement)
        if name is not None and name not in live and _pure(statement.value):
            continue
        kept.append(statement)
        if name is not None:  # reads before this assignment see an earlier value
            live.discard(name)
        live |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    return kept[::-1]
