"""Helion's `hl.inline_triton(triton_source, args, output_like)` for the device compiler: a snippet
of Triton written into the kernel where it is called. `args` (a list or tuple for `{0}`, `{1}`,
..., or a dict for `{name}`) fill the snippet's placeholders with the operands' Triton names (a
device value's variable, a host scalar's parameter, a host tensor's pointer, a string as written,
a number as a literal); the names the snippet assigns are renamed to fresh ones, so it cannot
overwrite the kernel's. The snippet's statements are emitted in order; with `output_like` (a
device value, or a tuple or list of them) its last statement is an expression whose value (one
value, or a tuple of them) takes those values' dtypes and shapes, which `tl.static_assert`
checks when Triton compiles the kernel. With `output_like=None` the call returns None."""
from __future__ import annotations

import ast
import textwrap
from typing import Any

from . import exc
from .values import HostTensor, TVal, tl_dtype


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)


class InlineTritonMixin:
    def inline_triton(self, triton_source: Any, args: Any, output_like: Any) -> Any:
        if not isinstance(triton_source, str):
            raise self.error(exc.NotSupported, f"hl.inline_triton's source must be a string, got {type(triton_source).__name__}")
        outputs = self.snippet_outputs(output_like)
        module = self.snippet_module(triton_source, args)
        *prefix, last = module.body
        if outputs is not None and not isinstance(last, ast.Expr):
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
        result = b.assign(ast.unparse(last.value), "inline")
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
        try:
            if isinstance(args, dict):
                text = text.format(**{key: self.snippet_operand(value) for key, value in args.items()})
            elif isinstance(args, (tuple, list)):
                text = text.format(*[self.snippet_operand(value) for value in args])
            else:
                raise self.error(exc.NotSupported, f"hl.inline_triton's args must be a tuple, list or dict, not "
                                 f"{type(args).__name__}")
            module = ast.parse(text)
        except (KeyError, IndexError, ValueError, SyntaxError) as err:
            raise self.error(exc.NotSupported, f"hl.inline_triton's source with its args: {type(err).__name__}: {err}") from None
        if not module.body:
            raise self.error(exc.NotSupported, "hl.inline_triton's source holds no code")
        return module

    def snippet_operand(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, HostTensor):
            return value.param
        return self.atom(value)
