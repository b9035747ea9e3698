"""Reductions, softmax and matrix products for the device compiler, including the chunk loops that
implement looped reductions by re-materializing lazy values one chunk at a time."""
from __future__ import annotations

import ast
import contextlib
from typing import Any, Callable, Iterator

import torch

from . import exc
from .emitter import KernelBuilder
from .inline import inlinable
from .values import LOW_PRECISION, ONE, RDim, TVal, compute_dtype, place, placed_mask, same_dim, shape_key, tl_dtype


def opaque_identity(x: str) -> str:
    """`x` unchanged, through an op Triton's MLIR passes do not fold (LLVM later does, so it is free).

    Inside loops, float reductions of raw loads read their operand through this. Triton 3.6's
    TritonGPUOptimizeThreadLocality rewrites `carried = op(carried, reduce(load))` loops (it only
    matches reductions fed directly by a load), and that rewrite asserts when the loop result has
    more than one use and computes wrong results for e.g. `acc = acc - x.sum(1)`."""
    return f"tl.fma({x}, 1.0, -0.0)"


EXTREMA = {"max": "maximum", "min": "minimum"}  # a reduction kind's elementwise Triton function


class ValuesIndices(tuple):
    """Result of `torch.max/min(x, dim)`, `torch.sort` and `torch.topk`: (values, indices) with
    attribute access."""

    @property
    def values(self) -> Any:
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]


class LoopedIndices:
    """The indices of `torch.max/min(x, dim)` where `x` spans a looped reduction dim: the values
    reduce chunk by chunk, but the indices need the whole dim, so any use of them raises `error`
    (NotLoopable), which makes that dim persistent; values used alone keep the loop."""

    def __init__(self, error: exc.NotLoopable):
        self.error = error


def identity(kind: str, dtype: torch.dtype) -> str:
    if kind in ("sum", "mean"):
        return "0"
    if kind == "prod":
        return "1"
    if dtype.is_floating_point:
        return 'float("-inf")' if kind == "max" else 'float("inf")'
    info = torch.iinfo(dtype if dtype != torch.bool else torch.int32)
    return str(info.min if kind == "max" else info.max)


class ReduceMixin:
    # ------------------------------------------------------------------ chunk loops
    @contextlib.contextmanager
    def chunk_loop(self, rdim: RDim) -> Iterator[None]:
        if self.chunk_memo is not None:
            raise exc.NotLoopable("nested looped reductions", self.session.location(self.current_node)).with_rdims([rdim.rdim_id])
        b = self.builder
        offset = f"roffset_{rdim.rdim_id}"
        b.emit_loop(f"for {offset} in tl.range(0, {rdim.size_param}, {rdim.size_expr}):")
        b.depth += 1
        b.emit(f"{rdim.index} = {offset} + tl.arange(0, {rdim.size_expr})")
        if rdim.mask:
            b.emit(f"{rdim.mask} = {rdim.index} < {rdim.size_param}")
        self.chunk_memo = {}
        try:
            yield
        finally:
            self.chunk_memo = None
            b.depth -= 1

    def inside_loop(self) -> bool:
        """Whether code is being emitted inside a device loop or a chunk loop."""
        return bool(self.open_device_loops) or self.chunk_memo is not None

    def materialize(self, value: TVal) -> str:
        if self.chunk_memo is None:
            raise exc.NotLoopable(
                "a value spanning a looped reduction dimension is used where it must be computed at once",
                self.session.location(self.current_node),
            ).with_rdims([d.rdim_id for d in value.looped_rdims()])
        key = id(value)
        if key not in self.chunk_memo:
            args = [self.atom(c) for c in value.children]
            self.chunk_memo[key] = self.builder.assign(value.render(args), "c")
        return self.chunk_memo[key]

    def single_looped_rdim(self, value: TVal) -> RDim | None:
        looped = value.looped_rdims()
        if len(set(map(id, looped))) > 1:
            raise exc.NotLoopable("a value spans two looped reduction dimensions", self.session.location(self.current_node)).with_rdims([d.rdim_id for d in looped])
        return looped[0] if looped else None

    def mask_for(self, shape: tuple, axis: int) -> str | None:
        return placed_mask(shape, axis)

    # ------------------------------------------------------------------ reductions
    def reduce(self, kind: str, value: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> TVal:
        value = self.to_tval(value)
        rank = len(value.shape)
        if dim is None:
            axes = list(range(rank))
        elif isinstance(dim, (list, tuple)):
            axes = [d % rank for d in dim]
        else:
            axes = [dim % rank] if rank else []
        if dtype is not None:
            value = self.to_dtype(value, dtype)
        for axis in sorted(set(axes), reverse=True):
            value = self.reduce_axis(kind, value, axis, keepdim)
        return value

    def reduce_axis(self, kind: str, value: TVal, axis: int, keepdim: bool) -> TVal:
        dim = value.shape[axis]
        out_shape = value.shape[:axis] + ((ONE,) if keepdim else ()) + value.shape[axis + 1 :]
        out_dtype = value.dtype
        if kind in ("sum", "mean") and not value.dtype.is_floating_point:
            out_dtype = torch.float32 if kind == "mean" else torch.int32
        if kind == "prod" and not value.dtype.is_floating_point:  # PyTorch's integer product is int64
            out_dtype = torch.int64
        acc_dtype = torch.float32 if value.dtype in LOW_PRECISION or kind == "mean" and not value.dtype.is_floating_point else value.dtype
        if value.dtype == torch.bool:
            acc_dtype = torch.int32
        if kind == "prod" and not value.dtype.is_floating_point:
            acc_dtype = torch.int64
        if dim is ONE:
            out = value if keepdim else self.reshape_to(value, out_shape)
            return self.to_dtype(out, out_dtype)
        ident = identity(kind, acc_dtype)
        scale = f" / {dim.numel_expr}" if kind == "mean" else ""
        cast_out = "" if out_dtype == acc_dtype else f".to({tl_dtype(out_dtype)})"
        reducer = self.reducer(kind, axis, keepdim, acc_dtype)
        if isinstance(dim, RDim) and dim.looped and value.lazy:
            return self.looped_reduce(kind, value, axis, dim, acc_dtype, ident, reducer, scale, cast_out, out_shape, out_dtype)
        mask = self.mask_for(value.shape, axis)
        cast_in = "" if acc_dtype == value.dtype else f".to({tl_dtype(acc_dtype)})"

        def render(a: list[str]) -> str:
            x = f"{a[0]}{cast_in}"
            if mask:
                x = f"tl.where({mask}, {x}, {ident})"
            elif value.is_load and not cast_in and acc_dtype.is_floating_point and self.inside_loop():
                x = opaque_identity(x)
            return f"({reducer(x)}{scale}){cast_out}"

        return self.make(out_dtype, out_shape, render, [value], "red")

    def reducer(self, kind: str, axis: int, keepdim: bool, dtype: torch.dtype) -> Callable[[str], str]:
        """The Triton reduction of a tensor's text along `axis`: tl.sum / max / min, and tl.reduce
        with a combine function for "prod" and for float max / min (NaN-propagating, as PyTorch's
        amax / amin: tl.max / tl.min pass over NaN on the GPU)."""
        keep = ", keep_dims=True" if keepdim else ""
        if kind == "prod" or kind in ("max", "min") and dtype.is_floating_point:
            combine = "left * right" if kind == "prod" else self.extremum_text(EXTREMA[kind], "left", "right", dtype)
            helper = self.builder.helper(["left", "right"], [f"return {combine}"], "multiply" if kind == "prod" else kind)
            return lambda x: f"tl.reduce({x}, {axis}, {helper}{keep})"
        fn = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}[kind]
        return lambda x: f"{fn}({x}, {axis}{keep})"

    @staticmethod
    def extremum_text(fn: str, a: str, b: str, dtype: torch.dtype) -> str:
        """tl.maximum / tl.minimum of two operands of `dtype`; floats give NaN where either is NaN,
        as PyTorch's (Triton's default takes the other operand on the GPU)."""
        nan = ", propagate_nan=tl.PropagateNan.ALL" if dtype.is_floating_point else ""
        return f"tl.{fn}({a}, {b}{nan})"

    def looped_reduce(self, kind, value, axis, dim, acc_dtype, ident, reducer, scale, cast_out, out_shape, out_dtype) -> TVal:
        self.single_looped_rdim(value)
        b = self.builder
        acc = b.fresh("acc")
        sizes = ", ".join(d.size_expr for d in value.shape)
        b.emit(f"{acc} = tl.full([{sizes}], {ident}, {tl_dtype(acc_dtype)})")
        mask = self.mask_for(value.shape, axis)
        with self.chunk_loop(dim):
            self.reduction_pass = True
            try:
                x = self.atom(value)
            finally:
                self.reduction_pass = False
            if acc_dtype != value.dtype:
                x = f"{x}.to({tl_dtype(acc_dtype)})"
            if mask:
                x = f"tl.where({mask}, {x}, {ident})"
            if kind in EXTREMA:
                b.emit(f"{acc} = {self.extremum_text(EXTREMA[kind], acc, x, acc_dtype)}")
            else:
                b.emit(f"{acc} = {acc} {'*' if kind == 'prod' else '+'} {x}")
        result = TVal(out_dtype, out_shape, name=b.assign(f"({reducer(acc)}{scale}){cast_out}", "red"))
        if result.looped_rdims():
            raise exc.NotLoopable("reduction result still spans a looped dimension", self.session.location(self.current_node)).with_rdims([d.rdim_id for d in result.looped_rdims()])
        return result

    def max_min(self, kind: str, value: Any, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:
        if isinstance(dim, (TVal,)) or (dim is not None and not isinstance(dim, int)):
            return self.extremum("maximum" if kind == "max" else "minimum", value, dim)
        if dim is None:
            return self.reduce(kind, value)
        value = self.to_tval(value)
        values = self.reduce(kind, value, dim, keepdim)
        axis = dim % len(value.shape)
        if value.lazy:
            error = exc.NotLoopable(f"the indices of torch.{kind}(x, dim) need the whole dim; use a persistent reduction",
                                    self.session.location(self.current_node))
            return ValuesIndices((values, LoopedIndices(error.with_rdims([d.rdim_id for d in value.looped_rdims()]))))
        mask = self.mask_for(value.shape, axis)
        ident = identity(kind, value.dtype)
        arg = self.arg_reducer(kind, value.shape, axis, keepdim, value.dtype)
        wide = ".to(tl.float32)" if value.dtype in LOW_PRECISION else ""

        def render(a: list[str]) -> str:
            x = f"tl.where({mask}, {a[0]}{wide}, {ident})" if mask else f"{a[0]}{wide}"
            return f"{arg(x)}.to(tl.int64)"

        indices = self.make(torch.int64, values.shape, render, [value], "arg")
        return ValuesIndices((values, indices))

    def arg_reducer(self, kind: str, shape: tuple, axis: int, keepdim: bool, dtype: torch.dtype) -> Callable[[str], str]:
        """The index of the first largest ("max") or smallest element along `axis` of a tensor's
        text: tl.argmax / argmin, and for floats tl.reduce over (value, index) pairs in which NaN
        beats every number, as in PyTorch (tl.argmax passes over NaN)."""
        keep = ", keep_dims=True" if keepdim else ""
        if not dtype.is_floating_point:
            return lambda x: f"tl.arg{kind}({x}, {axis}{keep})"
        beats = ">" if kind == "max" else "<"
        helper = self.builder.helper(["lv", "li", "rv", "ri"], [
            "first = li < ri",
            f"left = (lv {beats} rv) | ((lv == rv) & first) | ((lv != lv) & ((rv == rv) | first))",
            "return tl.where(left, lv, rv), tl.where(left, li, ri)"], f"arg{kind}")
        return lambda x: f"tl.reduce(({x}, {self.lane_positions(shape, axis)}), {axis}, {helper}{keep})[1]"

    @staticmethod
    def lane_positions(shape: tuple, axis: int) -> str:
        """Each lane's position along `axis` (int32), broadcast to a block of `shape`."""
        index = place(f"tl.arange(0, {shape[axis].size_expr})", [axis], len(shape))
        return index if len(shape) == 1 else f"tl.broadcast_to({index}, [{', '.join(d.size_expr for d in shape)}])"

    def softmax(self, value: Any, dim: int, log: bool, dtype: Any = None) -> TVal:
        value = self.to_tval(value)
        out_dtype = dtype or value.dtype
        x = self.widened(value)
        m = self.reduce("max", x, dim, keepdim=True)
        shifted = self.binary(ast.Sub(), x, m)
        e = self.math("exp", shifted)
        s = self.reduce("sum", e, dim, keepdim=True)
        out = self.binary(ast.Sub(), shifted, self.math("log", s)) if log else self.binary(ast.Div(), e, s)
        return self.to_dtype(out, out_dtype)

    def var_mean(self, value: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
                 correction: Any = None) -> tuple:
        """torch.var_mean: (variance, mean) over `dim`, computed in float32 for low-precision inputs;
        the variance divides by N - correction (1 unless given, or 0 with unbiased=False)."""
        value = self.to_tval(value)
        if correction is None:
            correction = 0 if unbiased is False else 1
        x = self.widened(value)
        rank = len(x.shape)
        axes = list(range(rank)) if dim is None else [d % rank for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        mean = self.reduce("mean", x, axes, keepdim=True)
        deviation = self.binary(ast.Sub(), x, mean)
        var = self.reduce("mean", self.binary(ast.Mult(), deviation, deviation), axes, keepdim)
        if correction:
            count = " * ".join(f"({x.shape[a].numel_expr})" for a in axes if x.shape[a] is not ONE) or "1"
            scale = TVal(torch.float32, (), name=self.builder.assign(f"tl.full([], {count}, tl.float32) / ({count} - {correction})", "scale"))
            var = self.binary(ast.Mult(), var, scale)
        if not keepdim:
            for axis in sorted(axes, reverse=True):
                mean = self.squeeze(mean, axis)
        return self.to_dtype(var, value.dtype), self.to_dtype(mean, value.dtype)

    def cumulative(self, kind: str, value: Any, dim: int, dtype: Any = None, reverse: bool = False) -> TVal:
        """torch.cumsum / cumprod and hl.cumsum / cumprod (`reverse`) along `dim` (tl.cumsum /
        tl.cumprod), in float32 for low-precision inputs; integers accumulate in int64 as PyTorch's
        do. Lanes past a tile's end follow the valid ones along a forward scan, so they change none
        of them; a reversed scan gives them the identity."""
        value = self.to_tval(value)
        self.require_eager(value, f"torch.{kind}")
        out_dtype = dtype or (torch.int64 if not value.dtype.is_floating_point else value.dtype)
        compute = compute_dtype(out_dtype)
        x = self.to_dtype(value, compute)
        axis = dim % len(x.shape)
        mask = self.mask_for(x.shape, axis)
        if reverse and mask:  # lanes past the end come first: they take the identity
            identity = "0" if kind == "cumsum" else "1"
            x = self.make(compute, x.shape, lambda a: f"tl.where({mask}, {a[0]}, {identity})", [x])
        scanned = self.make(compute, x.shape, lambda a: f"tl.{kind}({a[0]}, {axis}, reverse={bool(reverse)})", [x], "scan")
        return self.to_dtype(scanned, out_dtype)

    def cumulative_extremum(self, kind: str, value: Any, dim: int) -> ValuesIndices:
        """torch.cummax / cummin along `dim`: (the running largest or smallest value, the int64
        position where it was last reached), as PyTorch's: a later equal value takes over the
        index, and from a NaN on the values are NaN (each later NaN taking the index).
        tl.associative_scan over (value, position) pairs; low-precision floats compare in
        float32, bool as int8. Lanes past a tile's end follow the valid ones, changing none."""
        value = self.to_tval(value)
        self.require_eager(value, f"torch.cum{kind}")
        compute = torch.int8 if value.dtype == torch.bool else compute_dtype(value.dtype)
        x = self.to_dtype(value, compute)
        axis = dim % len(x.shape)
        beats = ">=" if kind == "max" else "<="
        later = f"(rv {beats} lv) | (rv != rv)" if compute.is_floating_point else f"rv {beats} lv"
        helper = self.builder.helper(["lv", "li", "rv", "ri"], [
            f"later = {later}", "return tl.where(later, rv, lv), tl.where(later, ri, li)"], f"cum{kind}")
        positions = self.lane_positions(x.shape, axis)
        values, indices = self.results(f"tl.associative_scan(({self.atom(x)}, {positions}), {axis}, {helper})",
                                       [compute, torch.int32], x.shape, single=False)
        return ValuesIndices((self.to_dtype(values, value.dtype), self.to_dtype(indices, torch.int64)))

    def log_cumulative_sum_exp(self, value: Any, dim: int) -> TVal:
        """torch.logcumsumexp along `dim`: a scan of log(exp(a) + exp(b)) = max + log1p(exp(min -
        max)) (log1p in its accurate form, as elementary.log1p), exactly max + log 2 where a == b
        (two infinities of one sign included); NaN propagates. Float32 for low-precision inputs."""
        value = self.to_tval(value)
        self.require_eager(value, "torch.logcumsumexp")
        if not value.dtype.is_floating_point:
            raise self.error(exc.TypeMismatch, f"torch.logcumsumexp of {value.dtype} values; it takes floats")
        x = self.to_dtype(value, compute_dtype(value.dtype))
        axis = dim % len(x.shape)
        helper = self.builder.helper(["a", "b"], [
            f"high = {self.extremum_text('maximum', 'a', 'b', x.dtype)}",
            "t = tl.exp(tl.where(a == b, 0.0, tl.minimum(a, b) - high))",
            "u = 1.0 + t",
            "return high + tl.where(u == 1.0, t, tl.log(u) * (t / (u - 1.0)))"], "logaddexp")
        scanned = self.make(x.dtype, x.shape, lambda a: f"tl.associative_scan({a[0]}, {axis}, {helper})", [x], "scan")
        return self.to_dtype(scanned, value.dtype)

    def call_python(self, fn: Any, node: ast.Call, args: list) -> Any:
        """`fn(*args)` inlined, `fn` being the first argument (or `combine_fn=`) of the call `node`."""
        if not inlinable(fn):
            raise self.error(exc.NotSupported, f"a combine function must be a Python function, got {type(fn).__name__}", node)
        func = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "combine_fn")
        return self.inline_call(fn, ast.copy_location(ast.Call(func=func, args=[], keywords=[]), node), args, {})

    def combine_function(self, fn: Any, dtypes: list, node: ast.AST) -> str:
        """A `@triton.jit` function combining two elements of each of `dtypes` (`fn(*lefts, *rights)`,
        a Python function compiled as device code on scalars), the combine function of
        tl.associative_scan / tl.reduce. It may not read host values: Triton calls it with the
        elements alone."""
        count = len(dtypes)
        params = [f"left_{i}" for i in range(count)] + [f"right_{i}" for i in range(count)]
        args = [TVal(dtypes[i % count], (), name=name) for i, name in enumerate(params)]
        kernel_builder, self.builder = self.builder, KernelBuilder("combine")
        self.builder.depth = 0
        try:
            out = self.call_python(fn, node, args)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outs) != count:
                raise self.error(exc.ShapeMismatch, f"the combine function returns {len(outs)} values for {count} inputs", node)
            atoms = [self.atom(self.to_dtype(self.to_tval(v), dtypes[i])) for i, v in enumerate(outs)]
            helper = self.builder
        finally:
            self.builder = kernel_builder
        if helper.params:
            raise self.error(exc.NotSupported, "a combine function that reads host values "
                             f"({', '.join(p.host_expr for p in helper.params.values())})", node)
        return self.builder.helper(params, helper.lines + [f"return {', '.join(atoms)}"], "combine")

    def combine_inputs(self, values: Any, what: str) -> tuple[list, bool]:
        """(the inputs of a scan or reduction broadcast to one shape, whether one was given alone)."""
        single = not isinstance(values, (tuple, list))
        values = [self.to_tval(v) for v in ([values] if single else values)]
        shape = values[0].shape
        for v in values[1:]:
            shape = self.broadcast_shape(shape, v.shape)
        values = [self.broadcast_to(v, shape) for v in values]
        for v in values:
            self.require_eager(v, what)
        return values, single

    def combined_atoms(self, values: list, single: bool) -> str:
        """The Triton operand of a scan or reduction: one tensor, or a tuple of them."""
        return self.atom(values[0]) if single else "(" + ", ".join(self.atom(v) for v in values) + ",)"

    def results(self, expr: str, dtypes: list, shape: tuple, single: bool) -> Any:
        """The value(s) of a Triton call returning one tensor per dtype."""
        names = [self.builder.fresh("scan") for _ in dtypes]
        self.builder.emit(f"{', '.join(names)}{',' if len(names) == 1 and not single else ''} = {expr}")
        out = [TVal(dtype, shape, name=name) for dtype, name in zip(dtypes, names)]
        return out[0] if single else tuple(out)

    def associative_scan(self, node: ast.AST, combine_fn: Any, values: Any, dim: int, reverse: bool = False) -> Any:
        """hl.associative_scan: tl.associative_scan with `combine_fn` compiled as its combine function.
        Lanes past a tile's end follow the valid ones along a forward scan; a reversed scan over a
        masked dim is refused (they would come first)."""
        values, single = self.combine_inputs(values, "hl.associative_scan")
        axis = dim % len(values[0].shape)
        if reverse and self.mask_for(values[0].shape, axis):
            raise self.error(exc.NotSupported, "a reversed scan over a dim with a tail mask", node)
        helper = self.combine_function(combine_fn, [v.dtype for v in values], node)
        inputs = self.combined_atoms(values, single)
        expr = f"tl.associative_scan({inputs}, {axis}, {helper}, reverse={bool(reverse)})"
        return self.results(expr, [v.dtype for v in values], values[0].shape, single)

    def combine_reduce(self, node: ast.AST, combine_fn: Any, values: Any, dim: Any = None, other: Any = 0,
                       keep_dims: bool = False) -> Any:
        """hl.reduce: tl.reduce with `combine_fn` compiled as its combine function; lanes past a
        tile's end take `other` (one per input, or one for all), which must be its identity."""
        values, single = self.combine_inputs(values, "hl.reduce")
        rank = len(values[0].shape)
        others = list(other) if isinstance(other, (tuple, list)) else [other] * len(values)
        axes = list(range(rank)) if dim is None else [dim % rank]
        for axis in axes:
            mask = self.mask_for(values[0].shape, axis)
            if mask:
                values = [self.make(v.dtype, v.shape, lambda a, m=mask: f"tl.where({m}, {a[0]}, {a[1]})",
                                    [v, self.to_dtype(self.to_tval(o), v.dtype)]) for v, o in zip(values, others)]
        helper = self.combine_function(combine_fn, [v.dtype for v in values], node)
        inputs = self.combined_atoms(values, single)
        shape = values[0].shape
        for axis in sorted(axes, reverse=True):
            expr = f"tl.reduce({inputs}, {axis}, {helper}, keep_dims={bool(keep_dims)})"
            shape = shape[:axis] + ((ONE,) if keep_dims else ()) + shape[axis + 1:]
            out = self.results(expr, [v.dtype for v in values], shape, single)
            inputs = self.combined_atoms([out] if single else list(out), single)
        return out

    # ------------------------------------------------------------------ matrix products
    def matmul(self, a: Any, b: Any, out_dtype: Any = None) -> TVal:
        """torch.matmul / mm / bmm; `out_dtype` (PyTorch's overload of mm and bmm) accumulates into
        that type as hl.dot(out_dtype=) does. As torch.matmul: a one-dim operand is a vector
        (vector_product), and the operand of fewer dims gains leading unit dims."""
        a, b = self.to_tval(a), self.to_tval(b)
        if out_dtype is not None:
            return self.hl_dot(a, b, None, out_dtype)
        if 0 in (len(a.shape), len(b.shape)):
            raise self.error(exc.ShapeMismatch, f"matrix product of shapes {self.shape_text(a.shape)} and "
                             f"{self.shape_text(b.shape)}: both need at least one dim")
        if 1 in (len(a.shape), len(b.shape)):
            return self.vector_product(a, b)
        while len(a.shape) < len(b.shape):
            a = self.unsqueeze(a, 0)
        while len(b.shape) < len(a.shape):
            b = self.unsqueeze(b, 0)
        dtype = torch.promote_types(a.dtype, b.dtype)
        return self.dot_product(a, b, None, dtype)

    def of_rank(self, value: Any, rank: int, what: str) -> TVal:
        """`value`, which must have `rank` dims (torch.mm's and bmm's operands)."""
        value = self.to_tval(value)
        if len(value.shape) != rank:
            raise self.error(exc.ShapeMismatch, f"{what} of a value of shape {self.shape_text(value.shape)}; it takes {rank} dims")
        return value

    def vector_product(self, a: TVal, b: TVal) -> TVal:
        """torch.matmul where an operand has one dim: the broadcast product summed over the
        contracted dim in the compute dtype (a vector's dim of 1 cannot feed tl.dot)."""
        dtype = torch.promote_types(a.dtype, b.dtype)
        if len(a.shape) == 1 and len(b.shape) > 1:  # a @ b[..., k, n]: a along b's rows
            a, contracted = self.unsqueeze(a, 1), -2
        else:  # a[..., k] @ b or a[..., m, k] @ b[k]: b along a's last dim
            contracted = -1
        if not same_dim(a.shape[contracted], b.shape[contracted]):
            raise self.error(exc.ShapeMismatch, f"matrix product contracts {self.dim_text(a.shape[contracted])} with "
                             f"{self.dim_text(b.shape[contracted])}")
        wide = compute_dtype(dtype)
        product = self.binary(ast.Mult(), self.to_dtype(a, wide), self.to_dtype(b, wide))
        return self.to_dtype(self.reduce("sum", product, [len(product.shape) + contracted]), dtype)

    def addmm(self, acc: Any, a: Any, b: Any, beta: Any = 1, alpha: Any = 1) -> TVal:
        if beta != 1 or alpha != 1:
            product = self.matmul(a, b)
            product = self.binary(ast.Mult(), product, alpha) if alpha != 1 else product
            base = self.binary(ast.Mult(), acc, beta) if beta != 1 else acc
            return self.binary(ast.Add(), base, product)
        acc = self.to_tval(acc)
        return self.dot_product(self.to_tval(a), self.to_tval(b), acc, acc.dtype)

    def hl_dot(self, a: Any, b: Any, acc: Any = None, out_dtype: Any = None) -> TVal:
        a, b = self.to_tval(a), self.to_tval(b)
        if acc is not None:
            acc = self.to_tval(acc)
            return self.dot_product(a, b, acc, out_dtype or acc.dtype)
        if out_dtype is None:
            promoted = torch.promote_types(a.dtype, b.dtype)
            out_dtype = compute_dtype(promoted)
        return self.dot_product(a, b, None, out_dtype)

    def dot_product(self, a: TVal, b: TVal, acc: TVal | None, out_dtype: torch.dtype) -> TVal:
        for v in (a, b) + ((acc,) if acc is not None else ()):
            self.require_eager(v, "a matrix-product operand")
        if len(a.shape) < 2 or len(b.shape) < 2 or len(a.shape) != len(b.shape):
            raise self.error(exc.ShapeMismatch, f"matrix product of shapes {self.shape_text(a.shape)} and {self.shape_text(b.shape)}")
        k_a, k_b = a.shape[-1], b.shape[-2]
        if not same_dim(k_a, k_b):
            raise self.error(exc.ShapeMismatch, f"matrix product contracts {self.dim_text(k_a)} with {self.dim_text(k_b)} (shapes {self.shape_text(a.shape)} and {self.shape_text(b.shape)})")
        batch = self.broadcast_shape(a.shape[:-2], b.shape[:-2])
        shape = batch + (a.shape[-2], b.shape[-1])
        # tl.dot takes equal batch dims: an operand's unit batch dims are expanded
        a, b = (self.broadcast_to(v, batch + v.shape[-2:]) for v in (a, b))
        for d in (a.shape[-2], k_a, b.shape[-1]):
            self.session.note_dot_dim(d)
        self.session.found.dot_shapes.add(shape_key(shape))
        if a.finite_fill or b.finite_fill:
            self.session.note_constant_operand(self.open_device_loops)
        operand_dtype = torch.promote_types(a.dtype, b.dtype)
        a_s = self.cast_atom(a, operand_dtype)
        b_s = self.cast_atom(b, operand_dtype)
        if k_a is not ONE and k_a.mask is not None:
            # past the contraction dim's bound each operand is zero (a zero-filled load, or masked
            # here), or a finite constant whose product with the other's zeros is zero too
            if not a.is_load and not (a.finite_fill and not b.finite_fill):
                a_s = f"tl.where({placed_mask(a.shape, len(a.shape) - 1)}, {a_s}, 0)"
            if not b.is_load and not (b.finite_fill and not a.finite_fill):
                b_s = f"tl.where({placed_mask(b.shape[:-2] + (k_a,) + b.shape[-1:], len(b.shape) - 2)}, {b_s}, 0)"
        b_ = self.builder
        if acc is not None:
            if acc.shape != shape:
                self.broadcast_shape(acc.shape, shape)
            if acc.dtype == torch.float32 and acc.shape == shape:
                expr = f"tl.dot({a_s}, {b_s}, acc={acc.name})"
            else:
                expr = f"(tl.dot({a_s}, {b_s}) + {acc.name}.to(tl.float32))"
        else:
            expr = f"tl.dot({a_s}, {b_s})"
        if out_dtype != torch.float32 or operand_dtype == torch.float64:
            expr = f"{expr}.to({tl_dtype(out_dtype)})"
        return TVal(out_dtype, shape, name=b_.assign(expr, "dot"))
