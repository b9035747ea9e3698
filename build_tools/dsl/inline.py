"""Calls of plain Python functions in device code (a lambda or def passed as a kernel argument, a
default argument, a module-level helper, a closure): the device compiler inlines them.

A callee's source is found by its code object (file, first line, argument names and, for several
lambdas on one line, the columns of its instructions) and parsed once per file; each call site
compiles its own copy of the function's tree, so that the memory sites of two calls are two sites
while a structure that compiles one call twice (a peeled loop's tail) finds the same one.

The inlined body runs in a scope of its own (InlineScope): its parameters are the call's values,
and its free names resolve in the function's namespace, never the kernel's: a closure cell or a
default argument that holds a tensor or a number reaches the kernel as an argument, which the
launcher reads at call time from the function (`fn.__closure__[i].cell_contents` of a kernel
argument `fn`, and so on down nested closures), so that calls with another closure of the same code
run the same compiled kernel. The kernel's specialization key holds a callable argument's code
object and the keys of what its closure and defaults hold (callable_key): other code compiles
another kernel, a closure tensor of another dtype or (static) shape another specialization. A
module-level function is read through `sys.modules` (its closure's numbers at call time); no key
covers it, so tensors it holds are refused as global tensors are, and its other values (bools,
strings, global constants) are compile-time constants, as the kernel's own globals are."""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import linecache
import os
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch

from . import exc
from . import language as hl
from .values import HostScalar, HostTensor, TVal, scalar_dtype

# modules whose functions are lowered by the compiler's tables, never inlined
NOT_INLINED_MODULES = ("torch", "triton", "build_tools.dsl", "math", "builtins", "numpy")
UNSUPPORTED_FLAGS = {
    inspect.CO_GENERATOR: "a generator",
    inspect.CO_COROUTINE: "a coroutine",
    inspect.CO_ASYNC_GENERATOR: "an async generator",
    inspect.CO_ITERABLE_COROUTINE: "a coroutine",
    inspect.CO_VARARGS: "a function taking *args",
    inspect.CO_VARKEYWORDS: "a function taking **kwargs",
}
_SOURCE_LOCK = threading.Lock()
# filename -> (source text, functions defined in it by (name, first line); "<lambda>" for lambdas)
_PARSED_FILES: dict[str, tuple[str, dict[tuple[str, int], list]]] = {}


class Identity:
    """A key part equal only to itself: holds `obj` (a code object), so its id is never reused."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        return f"Identity({self.obj!r})"


def inlinable(fn: Any) -> bool:
    """Whether a device-code call of `fn` is inlined: a plain Python function (lambda or def) that
    is none of the DSL's, torch's or the standard library's."""
    if not isinstance(fn, types.FunctionType) or fn in hl.DEVICE_FUNCTIONS:
        return False
    module = getattr(fn, "__module__", None) or ""
    return not any(module == m or module.startswith(m + ".") for m in NOT_INLINED_MODULES)


def describe(fn: types.FunctionType) -> str:
    code = fn.__code__
    return f"{code.co_qualname if hasattr(code, 'co_qualname') else fn.__qualname__} " \
           f"({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


# ---------------------------------------------------------------------- source
def _functions_of_file(filename: str, module_globals: dict | None) -> dict[tuple[str, int], list] | None:
    """The function and lambda nodes of a source file by (name, first line), parsed once per text;
    None when the file cannot be read or parsed."""
    text = "".join(linecache.getlines(filename, module_globals))
    with _SOURCE_LOCK:
        cached = _PARSED_FILES.get(filename)
        if cached is not None and cached[0] == text:
            return cached[1]
    functions = None
    if text:
        try:
            tree = ast.parse(text, filename)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            functions = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.Lambda):
                    functions.setdefault(("<lambda>", node.lineno), []).append(node)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.setdefault((node.name, _first_line(node)), []).append(node)
    with _SOURCE_LOCK:
        _PARSED_FILES[filename] = (text, functions)
    return functions


def _argument_names(args: ast.arguments) -> list[str]:
    names = [a.arg for a in args.posonlyargs + args.args] + [a.arg for a in args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _code_argument_names(code: types.CodeType) -> list[str]:
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:count])


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _contains(node: ast.AST, position: tuple) -> bool:
    line, end_line, col, end_col = position
    start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    return start <= (line, col) and (end_line, end_col) <= end


def function_tree(fn: types.FunctionType) -> ast.Lambda | ast.FunctionDef:
    """The tree of `fn`'s definition in its source file (shared; callers copy it before changing
    it). NotSupported when it cannot be found."""
    code = fn.__code__
    functions = _functions_of_file(code.co_filename, fn.__globals__)
    if functions is None:
        raise exc.NotSupported(f"cannot find the source of {describe(fn)} to inline it in device code")
    wanted = _code_argument_names(code)
    candidates = [node for node in functions.get((code.co_name, code.co_firstlineno), [])
                  if _argument_names(node.args) == wanted]
    if len(candidates) > 1 and hasattr(code, "co_positions"):
        # several lambdas of one line with the same arguments: the one whose span holds the
        # positions of every instruction of the code (the innermost, for nested lambdas)
        positions = [p for p in code.co_positions() if None not in p and (p[0], p[2]) != (p[1], p[3])]
        inside = [node for node in candidates if all(_contains(node, p) for p in positions)]
        inside.sort(key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))
        candidates = inside[:1]
    if len(candidates) != 1:
        raise exc.NotSupported(f"cannot find the source of {describe(fn)} to inline it in device code")
    return candidates[0]


def local_names(tree: ast.Lambda | ast.FunctionDef) -> set[str]:
    """The names local to a function: its parameters and every name it assigns."""
    names = set(_argument_names(tree.args))
    body = [tree.body] if isinstance(tree, ast.Lambda) else tree.body
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                names.add(sub.id)
    return names


# ---------------------------------------------------------------------- scope
class InlineScope(dict):
    """The scope of an inlined function's body. Every name belongs to it (none is the kernel's, so
    none is evaluated as kernel host code): bound ones are its parameters and locals; a free name
    resolves on first use through `lookup` (closure cell, the function's globals, builtins)."""

    def __init__(self, lookup: Callable[[str], Any], locals_: set[str], owner: str):
        super().__init__()
        self.lookup = lookup
        self.locals = locals_
        self.owner = owner

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> Any:
        if name in self.locals:
            raise exc.NotSupported(f"local variable {name!r} of {self.owner} is read before it is assigned")
        value = self.lookup(name)
        self[name] = value
        return value

    def get(self, name: str, default: Any = None) -> Any:
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        if name in self.locals:
            return default
        try:
            return self[name]
        except exc.CompileError:
            return default


def static_lookup(fn: types.FunctionType, name: str) -> Any:
    """What free name `name` of `fn` holds (no wrapping), or None."""
    code = fn.__code__
    if name in code.co_freevars:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:
            return None
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, None)


def static_resolver(fn: types.FunctionType) -> Callable[[ast.AST], Any]:
    """Resolves a callee expression (`name`, `module.attr`) in `fn`'s namespace, or None."""

    def resolve(node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return static_lookup(fn, node.id)
        if isinstance(node, ast.Attribute):
            base = resolve(node.value)
            if isinstance(base, (types.ModuleType, type)):
                return getattr(base, node.attr, None)
        return None

    return resolve


def module_path(fn: Any) -> str | None:
    """A launcher expression reading a module-level function `fn` at call time (its module through
    `sys.modules`, then its qualified name), or None when it is not reachable so."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or not qualname or "<" in qualname:
        return None
    value: Any = sys.modules.get(module)
    for part in qualname.split("."):
        value = getattr(value, part, None)
    if value is not fn:
        return None
    return f"__import__('sys').modules[{module!r}].{qualname}"


def global_path(globals_: dict, name: str) -> str | None:
    """A launcher expression reading global `name` of the module whose namespace is `globals_`."""
    module = globals_.get("__name__")
    if not isinstance(module, str) or getattr(sys.modules.get(module), "__dict__", None) is not globals_:
        return None
    if not name.isidentifier():
        return None
    return f"__import__('sys').modules[{module!r}].{name}"


# ---------------------------------------------------------------------- specialization
def _plain_constant(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain_constant(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, torch.dtype))


def value_key(value: Any, tensor_key: Callable[[torch.Tensor], tuple], seen: set) -> tuple:
    """The key of a value that a callable's closure or defaults hold, matching how the inlined body
    compiles it: a tensor by its tensor key, a number by its type (a kernel argument), a callable by
    its code and closure, a plain constant by its value, anything else by its identity."""
    if isinstance(value, torch.Tensor):
        return tensor_key(value)
    if isinstance(value, types.FunctionType):
        return ("callable",) + callable_key(value, tensor_key, seen)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (type(value).__name__,)
    if _plain_constant(value):
        return ("const", repr(value))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    return ("object", Identity(value))


def callable_key(fn: types.FunctionType, tensor_key: Callable[[torch.Tensor], tuple], seen: set | None = None) -> tuple:
    """The part of a kernel's specialization key for a callable argument: its code object (by
    identity) and the keys of the values its closure cells and defaults hold."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return (Identity(fn.__code__), "cycle")
    seen = seen | {id(fn)}
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(value_key(cell.cell_contents, tensor_key, seen))
        except ValueError:
            cells.append(("empty",))
    defaults = tuple(value_key(v, tensor_key, seen) for v in fn.__defaults__ or ())
    kwdefaults = tuple(sorted((k, value_key(v, tensor_key, seen)) for k, v in (fn.__kwdefaults__ or {}).items()))
    return (Identity(fn.__code__), tuple(cells), defaults, kwdefaults)


def callable_json(fn: types.FunctionType, tensor_json: Callable[[torch.Tensor], Any], depth: int = 0) -> dict:
    """A JSON-able, deterministic form of `callable_key` (a generated variant's identity)."""
    code = fn.__code__

    def value(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return tensor_json(v)
        if isinstance(v, types.FunctionType):
            return callable_json(v, tensor_json, depth + 1) if depth < 8 else "callable"
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return type(v).__name__
        if _plain_constant(v):
            return v if not isinstance(v, torch.dtype) else str(v).replace("torch.", "")
        return type(v).__name__

    out: dict[str, Any] = {"callable": getattr(code, "co_qualname", fn.__qualname__),
                           "source": f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"}
    cells = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            cells.append([name, value(cell.cell_contents)])
        except ValueError:
            cells.append([name, None])
    if cells:
        out["closure"] = cells
    if fn.__defaults__:
        out["defaults"] = [value(v) for v in fn.__defaults__]
    return out


# ---------------------------------------------------------------------- the compiler's part
@dataclass(frozen=True)
class Reach:
    """How the launcher reaches a function or a value it holds: `path`, a launcher expression (None:
    it cannot), and whether the way starts at a kernel argument (`keyed`: the specialization key
    covers what the function holds)."""

    path: str | None
    keyed: bool

    def then(self, suffix: str) -> "Reach":
        return Reach(None if self.path is None else self.path + suffix, self.keyed and self.path is not None)


UNREACHED = Reach(None, False)


class InlineMixin:
    """DeviceCompiler's inlining of Python function calls (see the module's docstring)."""

    def init_inlining(self) -> None:
        self.inline_stack: list[types.CodeType] = []
        self.reaches: dict[int, tuple[Any, Reach]] = {}  # id(fn) -> (fn, how the launcher reaches it)
        self.inline_trees: dict[tuple, Any] = {}  # (call node, code) -> that call site's copy of the tree
        self.inline_values: dict[str, Any] = {}  # launcher expression -> wrapped host value

    # ------------------------------------------------------------------ reaching functions
    def note_callable(self, fn: Any, reach: Reach) -> Any:
        """Records how the launcher reaches callable `fn` (the first way found)."""
        if isinstance(fn, types.FunctionType) and id(fn) not in self.reaches:
            self.reaches[id(fn)] = (fn, reach)
        return fn

    def callable_reach(self, fn: types.FunctionType, func: ast.AST) -> Reach:
        """How the launcher reaches `fn`, called through expression `func` of the current scope."""
        known = self.reaches.get(id(fn))
        if known is not None and known[0] is fn:
            return known[1]
        reach = UNREACHED
        parsed = self.session.parsed
        if isinstance(func, ast.Name) and not isinstance(self.scope, InlineScope) and func.id not in self.scope:
            if func.id in self.session.env:
                # a host name of the kernel: the launcher has it under the same name, and a kernel
                # argument is part of the specialization key. A defaulted argument's value is not
                # the launcher's: its signature holds its own copy of the default (whose closure,
                # if any, the launcher cannot read)
                defaults = list(parsed.fn.__defaults__ or ()) + list((parsed.fn.__kwdefaults__ or {}).values())
                if not any(fn is d for d in defaults) or not (fn.__closure__ or fn.__defaults__ or fn.__kwdefaults__):
                    reach = Reach(func.id, func.id in parsed.params)
            elif parsed.fn.__globals__.get(func.id) is fn:
                reach = Reach(global_path(parsed.fn.__globals__, func.id), False)
        if reach.path is None:
            reach = Reach(module_path(fn), False)
        self.note_callable(fn, reach)
        return reach

    # ------------------------------------------------------------------ host values of the function
    def inline_host_value(self, value: Any, reach: Reach, hint: str, owner: types.FunctionType) -> Any:
        """A value that an inlined function's closure cell or default holds, as device code sees it:
        a tensor or a number becomes a kernel argument that the launcher reads at `reach`; a callable
        is remembered with its reach; anything else is a compile-time value.

        Tensors must be reached from a kernel argument (`reach.keyed`): the specialization key then
        holds their dtypes and shapes (callable_key), which the kernel is compiled for. A module-level
        function's closure is read at call time too, but no key covers it, so its tensors are refused
        as global tensors are."""
        if isinstance(value, types.FunctionType):
            return self.note_callable(value, reach)
        if isinstance(value, torch.Tensor):
            if not reach.keyed:
                raise exc.NotSupported(f"tensor {hint!r} captured by {describe(owner)}, which is not reached "
                                       "through a kernel argument, used in device code; pass it as an argument")
            known = self.inline_values.get(reach.path)
            if known is None:
                known = HostTensor(self.builder.param(reach.path, hint), value.to("meta"), reach.path)
                self.inline_values[reach.path] = known
            return known
        if isinstance(value, (int, float)) and not isinstance(value, bool) and reach.path is not None:
            known = self.inline_values.get(reach.path)
            if known is None:
                known = HostScalar(self.builder.param(reach.path, hint), value, scalar_dtype(value), host=reach.path)
                self.inline_values[reach.path] = known
            return known
        return value

    def free_value(self, fn: types.FunctionType, reach: Reach, name: str) -> Any:
        """Free name `name` of inlined function `fn` (reached by the launcher at `reach`)."""
        code = fn.__code__
        if name in code.co_freevars:
            index = code.co_freevars.index(name)
            try:
                value = fn.__closure__[index].cell_contents
            except ValueError:
                raise exc.NotSupported(f"free variable {name!r} of {describe(fn)} is not bound") from None
            return self.inline_host_value(value, reach.then(f".__closure__[{index}].cell_contents"), name, fn)
        if name in fn.__globals__:
            value = fn.__globals__[name]
            if isinstance(value, torch.Tensor):
                raise exc.NotSupported(f"global tensor {name!r} used in device code (by {describe(fn)}); "
                                       "pass it as an argument")
            if isinstance(value, types.FunctionType):
                return self.note_callable(value, Reach(global_path(fn.__globals__, name) or module_path(value), False))
            return value
        space = fn.__builtins__ if isinstance(fn.__builtins__, dict) else vars(fn.__builtins__)
        if name in space:
            return space[name]
        raise exc.NotSupported(f"name {name!r} is not defined (in {describe(fn)})")

    # ------------------------------------------------------------------ the call
    def inline_call(self, fn: types.FunctionType, node: ast.Call, args: list, kwargs: dict) -> Any:
        code = fn.__code__
        name = ast.unparse(node.func)
        for flag, what in UNSUPPORTED_FLAGS.items():
            if code.co_flags & flag:
                raise self.error(exc.NotSupported, f"call to {name}(...) in device code: {describe(fn)} is {what}", node)
        if code in self.inline_stack:
            raise self.error(exc.NotSupported, f"recursive call to {name}(...) in device code ({describe(fn)})", node)
        if None in kwargs:
            raise self.error(exc.NotSupported, f"**kwargs in the device call {name}(...)", node)
        reach = self.callable_reach(fn, node.func)
        key = (node, code)
        tree = self.inline_trees.get(key)
        if tree is None:
            try:
                tree = copy.deepcopy(function_tree(fn))
            except exc.CompileError as err:
                raise err.with_location(self.session.location(node))
            self.inline_trees[key] = tree
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(exc.NotSupported, f"call to {name}(...) in device code: {err}", node) from None
        scope = InlineScope(lambda free: self.free_value(fn, reach, free), local_names(tree), describe(fn))
        for index, parameter in enumerate(inspect.signature(fn).parameters.values()):
            if parameter.name in bound.arguments:
                value = bound.arguments[parameter.name]
            elif parameter.kind == parameter.KEYWORD_ONLY:
                at = reach.then(f".__kwdefaults__[{parameter.name!r}]")
                value = self.inline_host_value(parameter.default, at, parameter.name, fn)
            else:
                at = reach.then(f".__defaults__[{index - (code.co_argcount - len(fn.__defaults__))}]")
                value = self.inline_host_value(parameter.default, at, parameter.name, fn)
            if isinstance(value, TVal) and value.extra == "carried":
                # the caller's loop-carried variable: the body's assignments to the parameter must
                # not write it
                value = TVal(value.dtype, value.shape, name=value.name)
            dict.__setitem__(scope, parameter.name, value)
        saved = (self.scope, self.following, self.current_node, self.session.location_file)
        self.scope, self.following = scope, []
        self.session.location_file = code.co_filename
        self.inline_stack.append(code)
        try:
            return self.inline_body(tree, fn)
        except exc.NotLoopable:
            raise
        except exc.CompileError as err:
            where = f"{err.location}: " if err.location else ""
            raise type(err)(f"in {name}(...), inlined from {describe(fn)}: {where}{err.message}",
                            self.session.location_at(node, saved[3]))
        finally:
            self.inline_stack.pop()
            self.scope, self.following, self.current_node, self.session.location_file = saved

    def inline_body(self, tree: ast.Lambda | ast.FunctionDef, fn: types.FunctionType) -> Any:
        """The value of an inlined call: a lambda's expression; a def's statements, then the value
        of the `return` that ends them (None without one)."""
        if isinstance(tree, ast.Lambda):
            return self.expr(tree.body)
        body = tree.body
        for i, stmt in enumerate(body):
            self.current_node = stmt
            self.following.append(body[i + 1:])
            try:
                if isinstance(stmt, ast.Return):
                    if i != len(body) - 1:
                        raise self.error(exc.NotSupported, "statements after return in an inlined function", stmt)
                    return None if stmt.value is None else self.expr(stmt.value)
                self.statement(stmt)
            except exc.CompileError as err:
                raise err.with_location(self.session.location(stmt))
            finally:
                self.following.pop()
        return None

    # ------------------------------------------------------------------ analysis through calls
    def nodes_through_calls(self, body: list[ast.stmt]):
        """(node, resolver) for every node of `body` and of the functions it calls that would be
        inlined (their trees, recursively), with the resolver of callee expressions in the
        namespace each node belongs to."""
        yield from self._nodes_through_calls(body, self.resolve_callee, frozenset())

    def _nodes_through_calls(self, body: list, resolve: Callable, seen: frozenset):
        for stmt in body:
            for sub in ast.walk(stmt):
                yield sub, resolve
                if not isinstance(sub, ast.Call):
                    continue
                try:
                    fn = resolve(sub.func)
                except exc.CompileError:
                    continue
                if not inlinable(fn) or fn.__code__ in seen:
                    continue
                try:
                    tree = function_tree(fn)
                except exc.CompileError:
                    continue
                inner = [tree.body] if isinstance(tree, ast.Lambda) else tree.body
                yield from self._nodes_through_calls(inner, static_resolver(fn), seen | {fn.__code__})
