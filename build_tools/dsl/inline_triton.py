"""Triton written by the kernel's author inside a kernel, as Helion takes it, for the device
compiler.

`hl.inline_triton(triton_source, args, output_like)`: a snippet written into the kernel where it
is called. `args` (a list or tuple for `{0}`, `{1}`, ..., or a dict for `{name}`) fill the
snippet's placeholders with the operands' Triton names (a device value's variable, a host
scalar's parameter, a host tensor's pointer, a string as written, a number as a literal); the
names the snippet assigns are renamed to fresh ones, so it cannot overwrite the kernel's. The
snippet's statements are emitted in order; with `output_like` (a device value, or a tuple or list
of them) its last statement is an expression whose value (one value, or a tuple of them) takes
those values' dtypes and shapes, which `tl.static_assert` checks when Triton compiles the kernel.
With `output_like=None` the call returns None.

`hl.triton_kernel(fn, args, output_like)`: a call of a `@triton.jit` function (or the source of
one), copied into the generated module with the jit functions it calls, since that module stands
alone: the globals it reads must be jit functions, numbers (written in as literals) or the
modules the generated one imports (`triton`, `triton.language`, `math`). `args` are the call's
operands (a list or tuple, or a dict of keywords); `output_like` is as for inline_triton.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import math
import textwrap
from typing import Any

import triton
import triton.language as tl
from triton.runtime.jit import KernelInterface

from . import exc
from .values import HostTensor, TVal, tl_dtype

# the modules a copied jit function may read, by the names the generated module imports them as
IMPORTED_MODULES = {id(triton): "triton", id(tl): "tl", id(math): "math"}


class _Renamer(ast.NodeTransformer):
    """Names replaced: by other names (str values) or by constants (other values)."""

    def __init__(self, names: dict[str, Any]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names:
            return node
        new = self.names[node.id]
        replaced = ast.Name(new, node.ctx) if isinstance(new, str) else ast.Constant(new)
        return ast.copy_location(replaced, node)


class InlineTritonMixin:
    def inline_triton(self, triton_source: Any, args: Any, output_like: Any) -> Any:
        if not isinstance(triton_source, str):
            raise self.error(exc.NotSupported, f"hl.inline_triton's source must be a string, got {type(triton_source).__name__}")
        outputs = self.snippet_outputs(output_like)
        module = self.snippet_module(triton_source, args)
        if outputs is not None and not isinstance(module.body[-1], ast.Expr):
            raise self.error(exc.NotSupported, "hl.inline_triton with output_like: the snippet's last statement must be "
                             "an expression, its value")
        stored = dict.fromkeys(n.id for n in ast.walk(module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        module = _Renamer({name: self.builder.fresh(name) for name in stored}).visit(module)
        *prefix, last = module.body
        b = self.builder
        for stmt in prefix if outputs is not None else module.body:
            for line in ast.unparse(stmt).splitlines():
                b.emit(line)
        if outputs is None:
            return None
        return self.snippet_result(ast.unparse(last.value), output_like, outputs)

    def snippet_result(self, expr: str, output_like: Any, outputs: tuple[list, bool]) -> Any:
        """The value(s) of the Triton expression `expr`, promised to be like `output_like`."""
        b = self.builder
        result = b.assign(expr, "inline")
        values, several = outputs
        if several:
            b.emit(f"tl.static_assert(len({result}) == {len(values)}, 'hl.inline_triton: {len(values)} values expected')")
        named = [b.assign(f"{result}[{i}]", "inline") for i in range(len(values))] if several else [result]
        for name, like in zip(named, values):
            b.emit(f"tl.static_assert({name}.dtype == {tl_dtype(like.dtype)}, 'hl.inline_triton: a {like.dtype} value "
                   "expected')")
            if like.shape:
                b.emit(f"tl.static_assert({name}.shape == {self.atom(like)}.shape, 'hl.inline_triton: a value of shape "
                       f"{self.shape_text(like.shape)} expected')")
        results = [TVal(like.dtype, like.shape, name=name) for name, like in zip(named, values)]
        return (tuple(results) if isinstance(output_like, tuple) else results) if several else results[0]

    def snippet_outputs(self, output_like: Any) -> tuple[list, bool] | None:
        """The device values `output_like` gives and whether they are several; None for None."""
        if output_like is None:
            return None
        several = isinstance(output_like, (tuple, list))
        values = list(output_like) if several else [output_like]
        if not values or not all(isinstance(v, TVal) for v in values):
            raise self.error(exc.NotSupported, "hl.inline_triton's output_like must be a device value or a non-empty tuple "
                             "or list of them")
        return values, several

    def snippet_module(self, triton_source: str, args: Any) -> ast.Module:
        """The snippet, dedented, its placeholders filled with the operands' names, parsed."""
        text = textwrap.dedent(triton_source).strip()
        operands = self.snippet_operands(args, "hl.inline_triton")
        try:
            text = text.format(**operands) if isinstance(operands, dict) else text.format(*operands)
            module = ast.parse(text)
        except (KeyError, IndexError, ValueError, SyntaxError) as err:
            raise self.error(exc.NotSupported, f"hl.inline_triton's source with its args: {type(err).__name__}: {err}") from None
        if not module.body:
            raise self.error(exc.NotSupported, "hl.inline_triton's source holds no code")
        return module

    def snippet_operands(self, args: Any, what: str) -> list[str] | dict[str, str]:
        """The Triton names of `args`, a tuple or list (positional) or a dict (by name)."""
        if isinstance(args, dict):
            return {key: self.snippet_operand(value) for key, value in args.items()}
        if isinstance(args, (tuple, list)):
            return [self.snippet_operand(value) for value in args]
        raise self.error(exc.NotSupported, f"{what}'s args must be a tuple, list or dict, not {type(args).__name__}")

    def snippet_operand(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, HostTensor):
            return value.param
        return self.atom(value)

    def triton_kernel(self, triton_source_or_fn: Any, args: Any, output_like: Any) -> Any:
        outputs = self.snippet_outputs(output_like)
        name = self.copied_jit_function(triton_source_or_fn)
        operands = self.snippet_operands(args, "hl.triton_kernel")
        if isinstance(operands, dict):
            operands = [f"{key}={operand}" for key, operand in operands.items()]
        call = f"{name}({', '.join(operands)})"
        if outputs is None:
            self.builder.emit(call)
            return None
        return self.snippet_result(call, output_like, outputs)

    def copied_jit_function(self, fn: Any) -> str:
        """The generated module's name of `fn` (a jit function, or a function definition's source),
        copied with the jit functions it calls (see the module docstring)."""
        if isinstance(fn, KernelInterface):
            source, scope, shown = textwrap.dedent(inspect.getsource(fn.fn)), fn.fn.__globals__, fn.fn.__name__
        elif isinstance(fn, str):
            source, scope, shown = textwrap.dedent(fn).strip(), {}, "its source"
        else:
            raise self.error(exc.NotSupported, f"hl.triton_kernel of a {type(fn).__name__}; it takes a @triton.jit "
                             "function or the source of one")
        try:
            definition = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))
        except (SyntaxError, StopIteration):
            raise self.error(exc.NotSupported, f"hl.triton_kernel: {shown} holds no function definition") from None
        local = {a.arg for a in ast.walk(definition.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        replaced: dict[str, Any] = {}
        for node in ast.walk(definition):
            if isinstance(node, ast.Name) and node.id not in local and node.id not in replaced:
                replaced[node.id] = self.copied_global(node.id, scope, shown)
        base = definition.name.lstrip("_")
        definition = _Renamer({k: v for k, v in replaced.items() if v is not None}).visit(definition)
        definition.decorator_list, definition.name = [], "{name}"
        text = ast.unparse(definition)
        name = f"_{base}_{hashlib.sha1(text.encode()).hexdigest()[:10]}"
        self.builder.helpers.setdefault(name, "@triton.jit\n" + text.replace("{name}", name, 1))
        return name

    def copied_global(self, name: str, scope: dict, shown: str) -> Any:
        """What a copied jit function's global `name` becomes: a copied jit function's name, the
        generated module's name of a module, a number, or None (a builtin, kept as it is)."""
        if name not in scope:
            if name in ("tl", "triton", "math") or hasattr(builtins, name):
                return None
            raise self.error(exc.NotSupported, f"hl.triton_kernel: {shown} reads {name!r}, which is not defined")
        value = scope[name]
        if isinstance(value, KernelInterface):
            return self.copied_jit_function(value)
        if id(value) in IMPORTED_MODULES:
            return IMPORTED_MODULES[id(value)]
        if isinstance(value, tl.constexpr):
            value = value.value
        if isinstance(value, (bool, int, float)):
            return value
        raise self.error(exc.NotSupported, f"hl.triton_kernel: {shown} reads the global {name!r} (a {type(value).__name__}), "
                         "which the generated module cannot hold; pass it as an argument")
