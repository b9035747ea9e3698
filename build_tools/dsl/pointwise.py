"""Element-wise lowering for the device compiler: operators, torch math functions, casts, views,
value construction, and the table that maps torch/hl callables to their lowering."""
from __future__ import annotations

import ast
import math
import typing
from typing import Any, Callable

import torch

from . import exc
from . import language as hl
from .einsum import EinsumMixin
from .elementary import ElementaryMixin
from .memory import MemoryMixin
from .ordering import OrderingMixin
from .reduce import LoopedIndices, ReduceMixin
from .reshape import ReshapeMixin
from .rng import RandomMixin
from .slicing import SlicingMixin
from .split_dims import SplitMixin
from .sync import SyncMixin
from .torch_functions import TorchFunctionsMixin
from .values import (BIT_BACKED_FLOATS, LOW_PRECISION, ONE, BlockDim, DimSize, HostScalar, HostTensor, MergedDim, PartDim, RDim, TileVal, TVal,
                     compute_dtype, same_dim, scalar_dtype, size_arguments, tl_dtype)

BINARY_OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}
COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
# integer operators whose result is >= 0 when both operands are (no wrap-around assumed)
NON_NEGATIVE_OPS = (ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift)
UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
HOST_TENSOR_ALLOCATIONS = ("new_zeros", "new_ones", "new_full", "new_empty")  # host tensors' methods in device code
PY_OPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b, ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
MATH_FUNCTIONS = {
    "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})", "log2": "tl.log2({0})",
    "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})", "sigmoid": "tl.sigmoid({0})",
    "sin": "tl.sin({0})", "cos": "tl.cos({0})", "erf": "tl.erf({0})",
    "reciprocal": "(1.0 / {0})", "floor": "tl.floor({0})", "ceil": "tl.ceil({0})",
}


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        if math.isnan(value):
            return 'float("nan")'
    return repr(value)


class PointwiseMixin(ReshapeMixin, SplitMixin, ReduceMixin, MemoryMixin, SyncMixin, RandomMixin, TorchFunctionsMixin,
                     OrderingMixin, SlicingMixin, EinsumMixin, ElementaryMixin):
    # ------------------------------------------------------------------ value construction
    def make(self, dtype: torch.dtype, shape: tuple, render: Callable[[list[str]], str], children: list, prefix: str = "v") -> TVal:
        """A new device value: emitted now unless it spans a looped reduction dimension."""
        if any(isinstance(d, RDim) and d.looped for d in shape):
            return TVal(dtype, tuple(shape), render=render, children=list(children))
        return TVal(dtype, tuple(shape), name=self.builder.assign(render([self.atom(c) for c in children]), prefix))

    def atom(self, value: Any) -> str:
        if isinstance(value, TVal):
            if value.name is not None:
                return value.name
            return self.materialize(value)
        if isinstance(value, HostScalar):
            return value.expr
        if isinstance(value, TileVal):
            raise self.error(exc.TypeMismatch, "a tile used as a value; use tile.index")
        if isinstance(value, (bool, int, float)):
            return literal(value)
        if isinstance(value, torch.dtype):
            return tl_dtype(value)
        if isinstance(value, LoopedIndices):
            raise value.error
        raise self.error(exc.TypeMismatch, f"{type(value).__name__} used as a device value")

    def to_tval(self, value: Any) -> TVal:
        if isinstance(value, TVal):
            return value
        if isinstance(value, TileVal):
            return TVal(torch.int32, (value.dim,), name=value.dim.index, at_least=value.at_least)
        if isinstance(value, HostScalar):
            out = self.make(value.dtype, (), lambda a: a[0], [value])
            out.at_least = value.at_least
            return out
        if isinstance(value, (bool, int, float)):
            return self.constant_tensor(value)
        if isinstance(value, LoopedIndices):
            raise value.error
        raise self.error(exc.TypeMismatch, f"{type(value).__name__} used as a device tensor")

    def constant_tensor(self, value: Any, dtype: torch.dtype | None = None) -> TVal:
        dtype = dtype or scalar_dtype(value)
        out = self.make(dtype, (), lambda a: f"tl.full([], {literal(value)}, {tl_dtype(dtype)})", [])
        out.at_least = self.lower_bound(value)
        return out

    def lower_bound(self, value: Any) -> int | None:
        """A lower bound of `value` on every call, None when unknown: a constant's own, a tile index's
        (its loop's begin's), a size's 0, an unsigned or boolean value's 0, or what `binary` derives
        for integer +, -, *, // and the like of such values."""
        if isinstance(value, (bool, int)):
            return int(value)
        if isinstance(value, float):
            return math.floor(value) if math.isfinite(value) else None
        if isinstance(value, (TVal, HostScalar, TileVal)) and value.at_least is not None:
            return value.at_least
        if isinstance(value, (TVal, HostScalar)) and (value.dtype == torch.bool or value.dtype in UNSIGNED):
            return 0
        return None

    def known_non_negative(self, value: Any) -> bool:
        bound = self.lower_bound(value)
        return bound is not None and bound >= 0

    def result_lower_bound(self, op: ast.AST, left: Any, right: Any) -> int | None:
        """A lower bound of integer `left op right` from the operands' (wrap-around not assumed)."""
        low, high = self.lower_bound(left), self.lower_bound(right)
        if low is None or high is None:
            return None
        if isinstance(op, ast.Add):
            return low + high
        if isinstance(op, ast.Sub):  # only a constant's upper bound is known
            return low - right if isinstance(right, int) else None
        if low < 0 or high < 0:
            return None
        if isinstance(op, ast.Mult):
            return low * high
        if isinstance(op, ast.FloorDiv) and isinstance(right, int) and right > 0:
            return low // right
        return 0 if isinstance(op, NON_NEGATIVE_OPS) else None

    def require_eager(self, value: TVal, what: str) -> None:
        if value.lazy:
            raise exc.NotLoopable(
                f"{what} spans a looped reduction dimension; use a persistent reduction (reduction_loops=None)",
                self.session.location(self.current_node),
            ).with_rdims([d.rdim_id for d in value.looped_rdims()])

    def require_whole(self, dims: Any, what: str) -> None:
        """`what` needs each of `dims` whole: a looped reduction dim among them is made persistent
        (the compile is retried with it unlooped; see kernel.BoundKernel._discover)."""
        looped = [d.rdim_id for d in dims if isinstance(d, RDim) and d.looped]
        if looped:
            raise exc.NotLoopable(f"{what} needs whole reduction dims; use a persistent reduction (reduction_loops=None)",
                                  self.session.location(self.current_node)).with_rdims(looped)

    # ------------------------------------------------------------------ shapes
    def broadcast_shape(self, a: tuple, b: tuple) -> tuple:
        out = []
        for i in range(1, max(len(a), len(b)) + 1):
            da = a[-i] if i <= len(a) else ONE
            db = b[-i] if i <= len(b) else ONE
            if same_dim(da, db) or db is ONE:
                out.append(da)
            elif da is ONE:
                out.append(db)
            else:
                raise self.error(
                    exc.ShapeMismatch,
                    f"shapes {self.shape_text(a)} and {self.shape_text(b)} do not broadcast ({da!r} vs {db!r})",
                )
        return tuple(reversed(out))

    def shape_text(self, shape: tuple) -> str:
        return "[" + ", ".join(self.dim_text(d) for d in shape) + "]"

    def dim_text(self, dim: Any) -> str:
        if isinstance(dim, BlockDim):
            return f"tile_{dim.block_id}"
        if isinstance(dim, RDim):
            return f"size{dim.size_value}"
        if isinstance(dim, MergedDim):
            return "*".join(self.dim_text(p) for p in dim.parts)
        if isinstance(dim, PartDim):
            return repr(dim).replace("block", "tile_")
        return "1"

    def expand_to(self, value: TVal, shape: tuple) -> str:
        """Triton expression of `value` reshaped (by inserting unit axes) so it broadcasts to `shape`."""
        if value.shape == shape or len(value.shape) == len(shape):
            return self.atom(value)
        j = len(shape) - len(value.shape)
        if j < 0:
            raise self.error(exc.ShapeMismatch, f"value of shape {self.shape_text(value.shape)} stored into {self.shape_text(shape)}")
        parts = ["None"] * j + [":"] * len(value.shape)
        return f"{self.atom(value)}[{', '.join(parts)}]" if parts else self.atom(value)

    # ------------------------------------------------------------------ dtypes
    def result_dtype(self, values: list) -> torch.dtype:
        tensors = [v for v in values if isinstance(v, TVal) and v.shape != ()]
        scalars = [v for v in values if not (isinstance(v, TVal) and v.shape != ())]
        dtype = None
        for t in tensors:
            dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
        scalar_types = [self.value_dtype(s) for s in scalars]
        if dtype is None:
            for s in scalar_types:
                dtype = s if dtype is None else torch.promote_types(dtype, s)
            return dtype or torch.float32
        for s in scalar_types:
            if s.is_floating_point and not dtype.is_floating_point:
                dtype = torch.float32 if s != torch.float64 else s
            elif s != torch.bool and dtype == torch.bool:
                dtype = s
        return dtype

    def value_dtype(self, value: Any) -> torch.dtype:
        if isinstance(value, (TVal, HostScalar)):
            return value.dtype
        if isinstance(value, TileVal):
            return torch.int32
        return scalar_dtype(value)

    def cast_atom(self, value: Any, dtype: torch.dtype) -> str:
        text = self.atom(value)
        if isinstance(value, (TVal, HostScalar)) and value.dtype != dtype:
            return f"{text}.to({tl_dtype(dtype)})"
        return text

    def to_dtype(self, value: Any, dtype: torch.dtype) -> Any:
        value = self.to_tval(value)
        if value.dtype == dtype:
            return value
        if dtype == torch.bool:
            return self.make(dtype, value.shape, lambda a: f"({a[0]} != 0)", [value])
        if dtype == torch.bfloat16 and not value.dtype.is_floating_point:
            return self.integer_to_bfloat16(value)
        out = self.make(dtype, value.shape, lambda a: f"{a[0]}.to({tl_dtype(dtype)})", [value])
        # a value >= 0 stays so in a type that holds it (a float, a wider integer); a float truncates toward zero
        if dtype.is_floating_point or dtype.itemsize >= value.dtype.itemsize:
            out.at_least = value.at_least
        return out

    def widened(self, value: TVal) -> TVal:
        """`value` in the dtype its arithmetic runs in (compute_dtype: float32 for low precision)."""
        return self.to_dtype(value, compute_dtype(value.dtype))

    def integer_to_bfloat16(self, value: TVal) -> TVal:
        """An integer tensor in bfloat16 as PyTorch converts it: rounded to float32, then to
        bfloat16 (to nearest, ties to even) by integer arithmetic on float32's bits. Triton 3.6
        folds `.to(tl.float32).to(tl.bfloat16)` into one rounding on sm_90 (2**24 + 2**16 + 1 became
        2**24 + 2**17, not PyTorch's 2**24; H100, 2026-12-06), its interpreter turns integers into
        NaN bfloat16 directly and truncates float32 to bfloat16. An integer's float32 is finite,
        so the rounding needs no NaN case."""
        bits = self.make(torch.uint32, value.shape, lambda a: f"{a[0]}.to(tl.float32).to(tl.uint32, bitcast=True)", [value])
        return self.make(torch.bfloat16, value.shape, lambda a: f"(({a[0]} + 0x7FFF + (({a[0]} >> 16) & 1)) >> 16)"
                         ".to(tl.uint16).to(tl.bfloat16, bitcast=True)", [bits])

    # ------------------------------------------------------------------ operators
    def binary(self, op: ast.AST, left: Any, right: Any) -> Any:
        if isinstance(left, TileVal):
            left = self.to_tval(left)
        if isinstance(right, TileVal):
            right = self.to_tval(right)
        if not isinstance(left, (TVal, HostScalar)) and not isinstance(right, (TVal, HostScalar)):
            fn = PY_OPS.get(type(op))
            if fn is None:
                raise self.error(exc.NotSupported, f"operator {type(op).__name__} on constants")
            return fn(left, right)
        if isinstance(op, ast.Pow):
            return self.power(left, right)
        if isinstance(op, ast.MatMult):
            return self.matmul(left, right)
        if isinstance(op, ast.Mult) and (isinstance(left, DimSize) or isinstance(right, DimSize)):
            size, factor = (left, right) if isinstance(left, DimSize) else (right, left)
            scaled = self.scaled_size(size, factor)
            if scaled is not None:
                return scaled
        if isinstance(op, ast.FloorDiv) and isinstance(left, DimSize):
            part = self.divided_size(left, right)
            if part is not None:
                return part
        symbol = BINARY_OPS.get(type(op))
        if symbol is None:
            raise self.error(exc.NotSupported, f"operator {type(op).__name__} in device code")
        shape = self.broadcast_shape(self.shape_of(left), self.shape_of(right))
        dtype = self.result_dtype([left, right])
        if isinstance(op, ast.Div) and not dtype.is_floating_point:
            dtype = torch.float32
        if isinstance(op, ast.FloorDiv) and dtype.is_floating_point:  # Triton's `//` takes integers only
            return self.float_floor_divide(left, right, dtype)
        compute = torch.float32 if dtype in LOW_PRECISION and symbol in "+-*/%" else dtype
        out_dtype = torch.bool if isinstance(op, COMPARISONS) else dtype
        if isinstance(op, (ast.BitAnd, ast.BitOr)) and dtype == torch.bool:
            compute = torch.bool
        if isinstance(op, COMPARISONS):
            compute = dtype

        def render(a: list[str]) -> str:
            expr = f"({a[0]} {symbol} {a[1]})"
            if out_dtype == compute or isinstance(op, COMPARISONS):
                return expr
            return f"{expr}.to({tl_dtype(out_dtype)})"

        cast_left = self.cast_operand(left, compute)
        cast_right = self.cast_operand(right, compute)
        if isinstance(op, COMPARISONS) and compute in LOW_PRECISION:
            # operands rounded to their common type as PyTorch's comparison rounds them, then
            # compared exactly in float32 (Triton's interpreter compares bfloat16 bit patterns)
            cast_left, cast_right = self.to_dtype(cast_left, torch.float32), self.to_dtype(cast_right, torch.float32)
        result = self.make(out_dtype, shape, render, [cast_left, cast_right])
        if not dtype.is_floating_point and not isinstance(op, COMPARISONS):
            if isinstance(op, (ast.FloorDiv, ast.Mod)) and not (self.known_non_negative(left) and self.known_non_negative(right)):
                return self.floored(op, result, left, right)
            result.at_least = self.result_lower_bound(op, left, right)
        if isinstance(op, ast.Mod) and dtype.is_floating_point:
            # Triton's float `%` is C's fmod (the dividend's sign), PyTorch's the divisor's
            return self.where(self.remainder_fix(result, right), self.binary(ast.Add(), result, right), result)
        return result

    def floored(self, op: ast.AST, truncated: TVal, left: Any, right: Any) -> TVal:
        """Integer `//` and `%` as PyTorch (and Python) round them, from Triton's, which truncate
        toward zero as C does: where the truncated remainder is nonzero and its sign differs from
        the divisor's, the quotient is one less and the remainder gains the divisor. Operands known
        to be >= 0 (indices, sizes) skip this."""
        if isinstance(op, ast.FloorDiv):
            remainder = self.binary(ast.Sub(), left, self.binary(ast.Mult(), truncated, right))
        else:
            remainder = truncated
        fix = self.remainder_fix(remainder, right)
        if isinstance(op, ast.FloorDiv):
            return self.where(fix, self.binary(ast.Sub(), truncated, 1), truncated)
        return self.where(fix, self.binary(ast.Add(), remainder, right), remainder)

    def remainder_fix(self, remainder: Any, divisor: Any) -> TVal:
        """Where a C-style remainder (the dividend's sign) is nonzero with a sign other than the
        divisor's: there PyTorch's floored quotient is one less and its remainder one divisor more.
        With a divisor known >= 0 that is just a negative remainder."""
        if self.known_non_negative(divisor):
            return self.binary(ast.Lt(), remainder, 0)
        differs = self.binary(ast.NotEq(), self.binary(ast.Lt(), remainder, 0), self.binary(ast.Lt(), divisor, 0))
        return self.binary(ast.BitAnd(), self.binary(ast.NotEq(), remainder, 0), differs)

    def float_floor_divide(self, left: Any, right: Any, dtype: torch.dtype) -> TVal:
        """Float `//` as PyTorch computes it (in float32 for low precision): from the exact remainder
        (fmod), not by flooring a rounded quotient (1.0 // 0.1 is 9, though 1.0 / 0.1 rounds to 10):
        (a - fmod(a, b)) / b, one less where the remainder's sign differs from the divisor's, then
        rounded to the nearest integer; a / b where b is zero."""
        compute = compute_dtype(dtype)
        a, b = self.cast_operand(left, compute), self.cast_operand(right, compute)
        remainder = self.fmod(a, b)
        quotient = self.binary(ast.Div(), self.binary(ast.Sub(), a, remainder), b)
        quotient = self.where(self.remainder_fix(remainder, b), self.binary(ast.Sub(), quotient, 1.0), quotient)
        low = self.math("floor", quotient)
        nearest = self.where(self.binary(ast.Gt(), self.binary(ast.Sub(), quotient, low), 0.5), self.binary(ast.Add(), low, 1.0), low)
        out = self.where(self.binary(ast.Eq(), b, 0), self.binary(ast.Div(), a, b), nearest)
        return self.to_dtype(out, dtype)

    def cast_operand(self, value: Any, dtype: torch.dtype) -> Any:
        if isinstance(value, (TVal, HostScalar)) and value.dtype != dtype and dtype != torch.bool:
            return self.to_dtype(value, dtype)
        if isinstance(value, bool) and dtype != torch.bool:
            return int(value)
        return value

    def shape_of(self, value: Any) -> tuple:
        return value.shape if isinstance(value, TVal) else ()

    def power(self, base: Any, exponent: Any) -> Any:
        if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
            if float(exponent).is_integer() and 0 <= exponent <= 8:
                if exponent == 0:
                    return self.full_like(base, 1.0)
                out = base
                for _ in range(int(exponent) - 1):
                    out = self.binary(ast.Mult(), out, base)
                return out
            if exponent == -1:
                return self.binary(ast.Div(), 1.0, base)
            if exponent == 0.5:
                return self.math("sqrt", base)
            if exponent == -0.5:
                return self.math("rsqrt", base)
        log = self.math("log2", base)
        return self.math("exp2", self.binary(ast.Mult(), log, exponent))

    def unary_op(self, op: ast.AST, value: Any) -> Any:
        if isinstance(value, TileVal):
            value = self.to_tval(value)
        if not isinstance(value, (TVal, HostScalar)):
            if isinstance(op, ast.USub):
                return -value
            if isinstance(op, ast.Not):
                return not value
            if isinstance(op, ast.UAdd):
                return value
            return ~value
        if isinstance(op, ast.UAdd):
            return value
        if isinstance(op, ast.USub):
            if value.dtype in BIT_BACKED_FLOATS:
                # the sign bit flipped, which is what negation does; Triton's interpreter keeps these
                # dtypes in integer arrays and negates the integers
                bits = f"tl.int{value.dtype.itemsize * 8}"
                flip = -(1 << (value.dtype.itemsize * 8 - 1))
                return self.make(value.dtype, self.shape_of(value),
                                 lambda a: f"({a[0]}.to({bits}, bitcast=True) ^ {flip}).to({tl_dtype(value.dtype)}, bitcast=True)", [value])
            return self.make(value.dtype, self.shape_of(value), lambda a: f"(-{a[0]})", [value])
        if isinstance(op, ast.Not) or (isinstance(op, ast.Invert) and value.dtype == torch.bool):
            return self.make(torch.bool, self.shape_of(value), lambda a: f"({a[0]} == 0)", [value])
        return self.make(value.dtype, self.shape_of(value), lambda a: f"(~{a[0]})", [value])

    def math(self, fn: str, value: Any) -> TVal:
        value = self.to_tval(value)
        dtype = value.dtype if value.dtype.is_floating_point else torch.float32
        compute = torch.float32 if dtype != torch.float64 else dtype
        template = MATH_FUNCTIONS[fn]
        arg = self.to_dtype(value, compute)

        def render(a: list[str]) -> str:
            expr = template.format(a[0])
            return expr if dtype == compute else f"({expr}).to({tl_dtype(dtype)})"

        return self.make(dtype, value.shape, render, [arg])

    def abs(self, value: Any) -> TVal:
        value = self.to_tval(value)
        return self.make(value.dtype, value.shape, lambda a: f"tl.abs({a[0]})", [value])

    def extremum(self, fn: str, a: Any, b: Any) -> TVal:
        shape = self.broadcast_shape(self.shape_of(a), self.shape_of(b))
        dtype = self.result_dtype([a, b])
        out = self.make(dtype, shape, lambda x: self.extremum_text(fn, x[0], x[1], dtype),
                        [self.cast_operand(a, dtype), self.cast_operand(b, dtype)])
        bounds = [self.lower_bound(a), self.lower_bound(b)]
        if fn == "maximum" and any(x is not None for x in bounds):
            out.at_least = max(x for x in bounds if x is not None)
        elif fn == "minimum" and all(x is not None for x in bounds):
            out.at_least = min(bounds)
        return out

    def where(self, cond: Any, a: Any, b: Any) -> TVal:
        cond = self.to_tval(cond) if not isinstance(cond, HostScalar) else cond
        shape = self.broadcast_shape(self.broadcast_shape(self.shape_of(cond), self.shape_of(a)), self.shape_of(b))
        dtype = self.result_dtype([a, b])
        if dtype in LOW_PRECISION and any(isinstance(v, (int, float)) for v in (a, b)):
            # a number beside a low-precision tensor: chosen among in float32 (exact), cast back;
            # Triton's interpreter cannot make bfloat16 constants
            return self.to_dtype(self.where(cond, self.cast_operand(a, torch.float32), self.cast_operand(b, torch.float32)), dtype)
        return self.make(dtype, shape, lambda x: f"tl.where({x[0]}, {x[1]}, {x[2]})", [cond, self.cast_operand(a, dtype), self.cast_operand(b, dtype)])

    def activation(self, name: str, value: Any, approximate: str = "none") -> TVal:
        """relu, silu and gelu (erf or tanh form), computed in float32 for low-precision inputs."""
        value = self.to_tval(value)
        if name == "relu":
            return self.extremum("maximum", value, 0)
        x = self.widened(value)
        if name == "silu":
            out = self.binary(ast.Mult(), x, self.math("sigmoid", x))
        elif approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cubic = self.binary(ast.Mult(), self.binary(ast.Mult(), self.binary(ast.Mult(), x, x), x), 0.044715)
            inner = self.binary(ast.Mult(), self.binary(ast.Add(), x, cubic), math.sqrt(2.0 / math.pi))
            out = self.binary(ast.Mult(), self.binary(ast.Mult(), x, 0.5), self.binary(ast.Add(), self.tanh(inner), 1.0))
        elif approximate == "none":  # 0.5 x (1 + erf(x / sqrt(2)))
            erf = self.math("erf", self.binary(ast.Mult(), x, 1.0 / math.sqrt(2.0)))
            out = self.binary(ast.Mult(), self.binary(ast.Mult(), x, 0.5), self.binary(ast.Add(), erf, 1.0))
        else:
            raise self.error(exc.NotSupported, f"gelu(approximate={approximate!r})")
        return self.to_dtype(out, value.dtype)

    def broadcast_to(self, value: Any, shape: tuple) -> TVal:
        """`value` expanded to `shape` (Tensor.expand / expand_as): each dim of `value` equal to the
        matching one of `shape` or 1."""
        value = self.to_tval(value)
        if len(shape) < len(value.shape) or self.broadcast_shape(value.shape, shape) != tuple(shape):
            raise self.error(exc.ShapeMismatch, f"cannot expand {self.shape_text(value.shape)} to {self.shape_text(tuple(shape))}")
        if value.shape == tuple(shape):
            return value
        sizes = ", ".join(d.size_expr for d in shape)
        return self.make(value.dtype, tuple(shape), lambda a: f"tl.broadcast_to({self.expand_to(value, tuple(shape))}, [{sizes}])", [value])

    def clamp(self, value: Any, low: Any = None, high: Any = None) -> TVal:
        out = self.to_tval(value)
        if low is not None:
            out = self.extremum("maximum", out, low)
        if high is not None:
            out = self.extremum("minimum", out, high)
        return out

    def full_like(self, like: Any, fill: Any, dtype: torch.dtype | None = None) -> TVal:
        like = self.to_tval(like)
        dtype = dtype or like.dtype
        return self.full(like.shape, fill, dtype)

    def full(self, shape: tuple, fill: Any, dtype: torch.dtype) -> TVal:
        sizes = lambda: ", ".join(d.size_expr for d in shape)  # noqa: E731
        if isinstance(fill, TVal):
            return self.make(dtype, tuple(shape), lambda a: f"tl.full([{sizes()}], 0, {tl_dtype(dtype)}) + {a[0]}", [self.to_dtype(fill, dtype)])
        # Triton's interpreter cannot build a bf16 constant; a cast of an fp32 one folds on GPUs
        built, cast = (torch.float32, ".to(tl.bfloat16)") if dtype == torch.bfloat16 else (dtype, "")
        filled = self.make(dtype, tuple(shape), lambda a: f"tl.full([{sizes()}], {a[0]}, {tl_dtype(built)}){cast}", [fill])
        filled.finite_fill = isinstance(fill, (int, float)) and math.isfinite(fill)
        return filled

    # ------------------------------------------------------------------ views
    def permute(self, value: Any, order: list[int]) -> TVal:
        value = self.to_tval(value)
        order = [o % len(value.shape) for o in order]
        if sorted(order) != list(range(len(value.shape))):
            raise self.error(exc.ShapeMismatch, f"permutation {order} of a rank-{len(value.shape)} value")
        if order == list(range(len(order))):
            return value
        shape = tuple(value.shape[o] for o in order)
        permuted = self.make(value.dtype, shape, lambda a: f"tl.permute({a[0]}, {tuple(order)})", [value])
        permuted.is_load = value.is_load  # a permuted zero-filled load is zero where masked too
        return permuted

    def transpose(self, value: Any, d0: int = 0, d1: int = 1) -> TVal:
        value = self.to_tval(value)
        order = list(range(len(value.shape)))
        d0, d1 = d0 % len(order), d1 % len(order)
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(value, order)

    def reshape_to(self, value: TVal, shape: tuple) -> TVal:
        sizes = lambda: ", ".join(d.size_expr for d in shape) or ""  # noqa: E731
        if not shape:
            return self.make(value.dtype, (), lambda a: f"tl.reshape({a[0]}, [])", [value])
        return self.make(value.dtype, tuple(shape), lambda a: f"tl.reshape({a[0]}, [{sizes()}])", [value])

    def unsqueeze(self, value: Any, dim: int) -> TVal:
        value = self.to_tval(value)
        rank = len(value.shape) + 1
        dim = dim % rank
        parts = [":"] * (rank - 1)
        parts.insert(dim, "None")
        shape = list(value.shape)
        shape.insert(dim, ONE)
        return self.make(value.dtype, tuple(shape), lambda a: f"{a[0]}[{', '.join(parts)}]", [value])

    def squeeze(self, value: Any, dim: int | None = None) -> TVal:
        value = self.to_tval(value)
        if dim is None:
            shape = tuple(d for d in value.shape if d is not ONE)
        else:
            dim = dim % len(value.shape)
            if value.shape[dim] is not ONE:
                return value
            shape = value.shape[:dim] + value.shape[dim + 1 :]
        return self.reshape_to(value, shape)

    def subscript_value(self, value: TVal, index_node: ast.AST) -> TVal:
        """`value[...]` of a device value: None, ':' and '...' entries, and slices and integers of
        compile-time bounds along whole dims (slicing.py)."""
        items = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        value, entries, dropped = self.subscript_parts(value, items)
        out = self.subscripted(value, entries)
        for axis in reversed(dropped):
            out = self.squeeze(out, axis)
        return out

    def hl_subscript(self, value: Any, index: Any) -> TVal:
        """Helion's `hl.subscript(value, [None, slice(None), ...])`, `value[None, :]` as a call."""
        if not isinstance(value, TVal):
            raise self.error(exc.NotSupported, f"hl.subscript of a {type(value).__name__}; it takes a device value")
        entries = list(index) if isinstance(index, (list, tuple)) else [index]
        for entry in entries:
            if entry is not None and entry != slice(None):
                raise self.error(exc.NotSupported, f"hl.subscript entry {entry!r}; only None and slice(None) are supported")
        return self.subscripted(value, entries)

    def subscripted(self, value: TVal, entries: list) -> TVal:
        """`value` indexed by `entries`: None puts in a unit dim, slice(None) keeps a dim, Ellipsis
        keeps the dims the other entries leave; dims past the entries are kept."""
        parts, shape, src = [], [], 0
        for at, entry in enumerate(entries):
            if entry is None:
                parts.append("None")
                shape.append(ONE)
            elif entry is Ellipsis:
                remaining = len(value.shape) - src - sum(1 for e in entries[at + 1:] if e is not None)
                parts.extend([":"] * remaining)
                shape.extend(value.shape[src : src + remaining])
                src += remaining
            else:
                if src >= len(value.shape):
                    raise self.error(exc.ShapeMismatch, f"{len(entries)} index entries for a value of shape "
                                     f"{self.shape_text(value.shape)}")
                parts.append(":")
                shape.append(value.shape[src])
                src += 1
        while src < len(value.shape):
            parts.append(":")
            shape.append(value.shape[src])
            src += 1
        return self.make(value.dtype, tuple(shape), lambda a: f"{a[0]}[{', '.join(parts)}]", [value])

    # ------------------------------------------------------------------ methods and function table
    def method(self, base: Any, name: str, args: list, kwargs: dict, node: ast.AST) -> Any:
        if isinstance(base, HostTensor):
            return self.host_tensor_method(base, name, args, kwargs, node)
        table: dict[str, Callable[..., Any]] = {
            **self.torch_methods(base),
            **self.ordering_methods(base),
            **self.slicing_methods(base),
            **self.elementary_methods(base),
            "to": lambda dtype=None, *a, **k: self.to_dtype(base, k.get("dtype", dtype)),
            "float": lambda: self.to_dtype(base, torch.float32),
            "half": lambda: self.to_dtype(base, torch.float16),
            "bfloat16": lambda: self.to_dtype(base, torch.bfloat16),
            "int": lambda: self.to_dtype(base, torch.int32),
            "long": lambda: self.to_dtype(base, torch.int64),
            "sum": lambda *a, **k: self.reduce("sum", base, *a, **k),
            "mean": lambda *a, **k: self.reduce("mean", base, *a, **k),
            "amax": lambda *a, **k: self.reduce("max", base, *a, **k),
            "amin": lambda *a, **k: self.reduce("min", base, *a, **k),
            "max": lambda *a, **k: self.max_min("max", base, *a, **k),
            "min": lambda *a, **k: self.max_min("min", base, *a, **k),
            "transpose": lambda d0=0, d1=1: self.transpose(base, d0, d1),
            "permute": lambda *dims: self.permute(base, list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else list(dims)),
            "t": lambda: self.transpose(base, 0, 1),
            "unsqueeze": lambda dim: self.unsqueeze(base, dim),
            "squeeze": lambda dim=None: self.squeeze(base, dim),
            "exp": lambda: self.math("exp", base),
            "exp2": lambda: self.math("exp2", base),
            "log": lambda: self.math("log", base),
            "sqrt": lambda: self.math("sqrt", base),
            "rsqrt": lambda: self.math("rsqrt", base),
            "sigmoid": lambda: self.math("sigmoid", base),
            "abs": lambda: self.abs(base),
            "clamp": lambda min=None, max=None: self.clamp(base, min, max),
            **self.allocation_methods(base.dtype),
            "relu": lambda: self.activation("relu", base),
            "masked_fill": lambda mask, value: self.where(mask, value, base),
            "expand_as": lambda other: self.broadcast_to(base, self.to_tval(other).shape),
            "expand": lambda *sizes: self.broadcast_to(base, self.expanded_shape(base, sizes)),
            "size": lambda dim=None: self.size_of(base, dim),
            "view": lambda *sizes: self.view(base, sizes),
            "reshape": lambda *sizes: self.view(base, sizes),
            "var_mean": lambda *a, **k: self.var_mean(base, *a, **k),
            "cumsum": lambda dim, dtype=None: self.cumulative("cumsum", base, dim, dtype),
            "cumprod": lambda dim, dtype=None: self.cumulative("cumprod", base, dim, dtype),
            "cummax": lambda dim: self.cumulative_extremum("max", base, dim),
            "cummin": lambda dim: self.cumulative_extremum("min", base, dim),
            "logcumsumexp": lambda dim: self.log_cumulative_sum_exp(base, dim),
            "var": lambda *a, **k: self.var_mean(base, *a, **k)[0],
            "softmax": lambda dim, **k: self.softmax(base, dim, log=False),
            "log_softmax": lambda dim, **k: self.softmax(base, dim, log=True),
            "contiguous": lambda: base,
            "clone": lambda: base,
        }
        handler = table.get(name)
        if handler is None:
            raise self.error(exc.NotSupported, f"method .{name}() on a device value", node)
        try:
            return handler(*args, **kwargs)
        except TypeError as err:
            raise self.error(exc.NotSupported, f".{name}() with these arguments: {err}", node) from None

    def allocation_methods(self, like_dtype: torch.dtype) -> dict[str, Callable[..., TVal]]:
        """`new_zeros` / `new_ones` / `new_empty` / `new_full` of a tensor of `like_dtype` (a device
        value's, or a host tensor's in device code; HOST_TENSOR_ALLOCATIONS)."""
        def filled(fill: Any) -> Callable[..., TVal]:
            return lambda size, dtype=None, **k: self.new_full(size, fill, dtype or like_dtype)

        return {"new_zeros": filled(0), "new_ones": filled(1), "new_empty": filled(0),
                "new_full": lambda size, fill_value, dtype=None, **k: self.new_full(size, fill_value, dtype or like_dtype)}

    def host_tensor_method(self, tensor: HostTensor, name: str, args: list, kwargs: dict, node: ast.AST) -> TVal:
        """A host tensor's allocation methods in device code (`weight.new_zeros(tile)`): a device
        value of the tensor's dtype; other methods need the tensor indexed first."""
        if name not in HOST_TENSOR_ALLOCATIONS:
            raise self.error(exc.NotSupported, f"method .{name}() of a host tensor in device code; index it first", node)
        try:
            return self.allocation_methods(tensor.meta.dtype)[name](*args, **kwargs)
        except TypeError as err:
            raise self.error(exc.NotSupported, f".{name}() with these arguments: {err}", node) from None

    def size_of(self, value: TVal, dim: int | None = None) -> Any:
        """`value.size(dim)`: a DimSize (1 for a unit dim); without `dim`, the tuple of them."""
        if dim is None:
            return tuple(self.size_of(value, d) for d in range(len(value.shape)))
        axis = value.shape[dim % len(value.shape)]
        if axis is ONE:
            return 1
        expr = axis.size_param if isinstance(axis, RDim) else axis.size_expr
        return DimSize(expr, self.dim_value(axis), torch.int32, dim=axis)

    def expanded_shape(self, value: TVal, sizes: tuple) -> tuple:
        """The shape `Tensor.expand(*sizes)` names: -1 keeps a dim of `value`, tiles give their dims."""
        sizes = size_arguments(sizes)
        lead = len(sizes) - len(value.shape)
        shape = []
        for i, size in enumerate(sizes):
            if isinstance(size, int) and size == -1 and i >= lead:
                shape.append(value.shape[i - lead])
            else:
                shape.extend(self.shape_from_sizes([size]))
        return tuple(shape)

    def arange(self, size: Any, dtype: torch.dtype = torch.int32, **_: Any) -> TVal:
        """hl.arange(size): 0, 1, ... over one dim of `size` (a registered block size gives its tiles'
        dim), as Triton's tl.arange; the dim's mask covers a size that is not a power of two."""
        (dim,) = self.shape_from_sizes([size])
        name = self.builder.assign(f"tl.arange(0, {dim.size_expr})", "arange")
        return self.to_dtype(TVal(torch.int32, (dim,), name=name), dtype)

    def new_full(self, size: Any, fill: Any, dtype: torch.dtype) -> TVal:
        return self.full(self.shape_from_sizes(size), fill, dtype)

    def function_table(self) -> dict:
        def ignore_node(fn: Callable[..., Any]) -> Callable[..., Any]:
            return lambda node, *a, **k: fn(*a, **k)

        table: dict[Any, Callable[..., Any]] = {}
        for name in MATH_FUNCTIONS:
            if hasattr(torch, name):
                table[getattr(torch, name)] = ignore_node(lambda v, _n=name, **k: self.math(_n, v))
        for name in ("exp", "exp2", "log", "log2", "sqrt"):
            table[getattr(math, name)] = table[getattr(torch, name)]
        for function, handler in {**self.torch_functions(), **self.ordering_functions(), **self.slicing_functions(),
                                  **self.einsum_functions(), **self.elementary_functions()}.items():
            table[function] = ignore_node(handler)
        table[torch.sigmoid] = ignore_node(lambda v: self.math("sigmoid", v))
        table[torch.nn.functional.sigmoid] = table[torch.sigmoid]
        table[torch.nn.functional.tanh] = table[torch.tanh]
        table[torch.abs] = ignore_node(self.abs)
        table[abs] = table[torch.abs]
        table[torch.maximum] = ignore_node(lambda a, b: self.extremum("maximum", a, b))
        table[torch.minimum] = ignore_node(lambda a, b: self.extremum("minimum", a, b))
        table[torch.where] = ignore_node(self.where)
        table[torch.clamp] = ignore_node(lambda v, min=None, max=None: self.clamp(v, min, max))
        table[torch.relu] = ignore_node(lambda v: self.activation("relu", v))
        table[torch.nn.functional.relu] = ignore_node(lambda v, inplace=False: self.activation("relu", v))
        table[torch.nn.functional.silu] = ignore_node(lambda v, inplace=False: self.activation("silu", v))
        table[torch.nn.functional.gelu] = ignore_node(lambda v, approximate="none": self.activation("gelu", v, approximate))
        table[torch.var_mean] = ignore_node(self.var_mean)
        table[torch.cumsum] = ignore_node(lambda v, dim, dtype=None: self.cumulative("cumsum", v, dim, dtype))
        table[torch.cumprod] = ignore_node(lambda v, dim, dtype=None: self.cumulative("cumprod", v, dim, dtype))
        table[torch.cummax] = ignore_node(lambda v, dim: self.cumulative_extremum("max", v, dim))
        table[torch.cummin] = ignore_node(lambda v, dim: self.cumulative_extremum("min", v, dim))
        table[torch.logcumsumexp] = ignore_node(lambda v, dim: self.log_cumulative_sum_exp(v, dim))
        table[torch.var] = ignore_node(lambda v, *a, **k: self.var_mean(v, *a, **k)[0])
        table[torch.sum] = ignore_node(lambda v, *a, **k: self.reduce("sum", v, *a, **k))
        table[torch.mean] = ignore_node(lambda v, *a, **k: self.reduce("mean", v, *a, **k))
        table[torch.amax] = ignore_node(lambda v, *a, **k: self.reduce("max", v, *a, **k))
        table[torch.amin] = ignore_node(lambda v, *a, **k: self.reduce("min", v, *a, **k))
        table[torch.max] = ignore_node(lambda v, *a, **k: self.max_min("max", v, *a, **k))
        table[torch.min] = ignore_node(lambda v, *a, **k: self.max_min("min", v, *a, **k))
        table[torch.softmax] = ignore_node(lambda v, dim, **k: self.softmax(v, dim, log=False, dtype=k.get("dtype")))
        table[torch.nn.functional.softmax] = table[torch.softmax]
        table[torch.log_softmax] = ignore_node(lambda v, dim, **k: self.softmax(v, dim, log=True, dtype=k.get("dtype")))
        table[torch.nn.functional.log_softmax] = table[torch.log_softmax]
        table[torch.zeros_like] = ignore_node(lambda v, dtype=None, **k: self.full_like(v, 0, dtype))
        table[torch.ones_like] = ignore_node(lambda v, dtype=None, **k: self.full_like(v, 1, dtype))
        table[torch.full_like] = ignore_node(lambda v, fill_value, dtype=None, **k: self.full_like(v, fill_value, dtype))
        table[torch.transpose] = ignore_node(self.transpose)
        table[torch.permute] = ignore_node(lambda v, dims: self.permute(v, list(dims)))
        table[torch.unsqueeze] = ignore_node(self.unsqueeze)
        table[torch.squeeze] = ignore_node(self.squeeze)
        table[torch.stack] = ignore_node(self.stack)
        for name in ("cat", "concat", "concatenate"):
            table[getattr(torch, name)] = ignore_node(lambda values, dim=0, *, axis=None: self.cat(values, dim if axis is None else axis))
        table[hl.join] = ignore_node(self.hl_join)
        table[hl.split] = ignore_node(self.hl_split)
        table[torch.matmul] = ignore_node(self.matmul)
        for name, rank in (("mm", 2), ("bmm", 3)):
            table[getattr(torch, name)] = ignore_node(lambda a, b, *rest, _r=rank, _w=f"torch.{name}", **k: self.matmul(
                self.of_rank(a, _r, _w), self.of_rank(b, _r, _w), *rest, **k))
        table[torch.addmm] = ignore_node(lambda acc, a, b, **k: self.addmm(acc, a, b, **k))
        table[torch.baddbmm] = ignore_node(lambda acc, a, b, **k: self.addmm(acc, a, b, **k))
        table[hl.dot] = ignore_node(self.hl_dot)
        for kind in ("rand", "randn"):  # random values (rng.py): the launcher draws the seed per launch
            table[getattr(torch, f"{kind}_like")] = lambda node, like, _k=kind, **k: self.random_like(node, _k, like, **k)
            table[getattr(torch, kind)] = lambda node, *sizes, _k=kind, **k: self.random_sized(node, _k, *sizes, **k)
        table[torch.nn.functional.dropout] = self.dropout
        table[torch.dropout] = lambda node, value, p, train: self.dropout(node, value, p, train)
        table[hl.rand] = self.hl_rand
        table[hl.randint] = self.hl_randint
        for function, attribute in hl.TILE_FUNCTIONS.items():
            table[function] = lambda node, tile, _a=attribute: self.tile_attribute(self.tile_argument(tile, node), _a, node)
        table[hl.arange] = ignore_node(self.arange)
        table[hl.associative_scan] = lambda node, fn, values, dim, reverse=False: self.associative_scan(node, fn, values, dim, reverse)
        table[hl.reduce] = lambda node, fn, values, dim=None, other=0, keep_dims=False: self.combine_reduce(
            node, fn, values, dim, other, keep_dims)
        table[hl.cumsum] = ignore_node(lambda v, dim, reverse=False: self.cumulative("cumsum", v, dim, reverse=reverse))
        table[hl.cumprod] = ignore_node(lambda v, dim, reverse=False: self.cumulative("cumprod", v, dim, reverse=reverse))
        table[typing.cast] = ignore_node(lambda _type, value: value)
        table[hl.zeros] = ignore_node(lambda size, dtype=torch.float32, **k: self.new_full(size, 0, dtype))
        table[hl.full] = ignore_node(lambda size, value, dtype=torch.float32, **k: self.new_full(size, value, dtype))
        table[hl.load] = lambda node, tensor, index, extra_mask=None, **k: self.load(self.host_tensor(tensor, node), list(index), extra_mask, node, **k)
        table[hl.store] = lambda node, tensor, index, value, extra_mask=None: self.store(self.host_tensor(tensor, node), list(index), value, extra_mask, node)
        for function, op in hl.ATOMIC_OPS.items():
            table[function] = lambda node, tensor, index, value, sem="relaxed", op=op: self.atomic(
                op, self.host_tensor(tensor, node), list(index), value, node, sem)
        table[hl.static_range] = ignore_node(self.static_range)
        table[hl.subscript] = ignore_node(self.hl_subscript)
        table[hl.device_print] = table[print] = ignore_node(self.device_print)
        table[hl.inline_triton] = ignore_node(self.inline_triton)
        table[hl.triton_kernel] = ignore_node(self.triton_kernel)
        table[zip] = ignore_node(lambda *sequences, strict=False: list(zip(*self.sequences(sequences, "zip"), strict=strict)))
        table[enumerate] = ignore_node(lambda sequence, start=0: list(enumerate(*self.sequences([sequence], "enumerate"), start)))
        table[hl.atomic_cas] = lambda node, tensor, index, expected, value, sem="relaxed": self.atomic_cas(
            self.host_tensor(tensor, node), list(index), expected, value, node, sem)
        table[hl.signal] = lambda node, pad, index, *a, **k: self.signal(self.host_tensor(pad, node), list(index), node, *a, **k)
        table[hl.wait] = lambda node, pad, index, *a, **k: self.wait(self.host_tensor(pad, node), list(index), node, *a, **k)
        table[min] = ignore_node(lambda a, b: self.extremum("minimum", a, b) if self.any_device(a, b) else min(a, b))
        table[max] = ignore_node(lambda a, b: self.extremum("maximum", a, b) if self.any_device(a, b) else max(a, b))
        table[float] = ignore_node(lambda v: self.to_dtype(v, torch.float32) if self.any_device(v) else float(v))
        table[int] = ignore_node(lambda v: self.to_dtype(v, torch.int32) if self.any_device(v) else int(v))
        return table

    def device_print(self, prefix: Any, *values: Any) -> None:
        """Helion's `hl.device_print(prefix, *values)` (and `print` in device code): Triton's
        `tl.device_print` of device values and run-time scalars after a string prefix."""
        if not isinstance(prefix, str):
            raise self.error(exc.NotSupported, f"print in device code takes a string prefix first, not {type(prefix).__name__}")
        for value in values:
            if not isinstance(value, (TVal, HostScalar)):
                raise self.error(exc.NotSupported, f"print in device code of a {type(value).__name__}; it prints device "
                                 "values and run-time scalars")
        self.builder.emit(f"tl.device_print({', '.join([repr(prefix)] + [self.atom(v) for v in values])})")

    def sequences(self, values: Any, what: str) -> list:
        """`values` as the compile-time sequences `zip` / `enumerate` take in device code."""
        for value in values:
            if not isinstance(value, (tuple, list, range)):
                raise self.error(exc.NotSupported, f"{what} of a {type(value).__name__} in device code; it takes tuples, "
                                 "lists and hl.static_range")
        return list(values)

    def any_device(self, *values: Any) -> bool:
        return any(isinstance(v, (TVal, HostScalar, TileVal)) for v in values)

    def tile_argument(self, value: Any, node: ast.AST) -> TileVal:
        if not isinstance(value, TileVal):
            raise self.error(exc.TypeMismatch, f"expected a tile, got {type(value).__name__}", node)
        return value

    def host_tensor(self, value: Any, node: ast.AST) -> HostTensor:
        if not isinstance(value, HostTensor):
            raise self.error(exc.TypeMismatch, f"expected a host tensor, got {type(value).__name__}", node)
        return value
