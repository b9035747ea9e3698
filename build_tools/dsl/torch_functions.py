"""torch and torch.nn.functional functions of device code beyond pointwise.py's core, written as
compositions of its operations (arithmetic, comparisons, `where`, math functions) and
reduce.py's reductions, with PyTorch's semantics: `pow`, `square`, `sign`, `round` (half to
even), `fmod`, `remainder`, `add` / `sub` (with `alpha`), `mul`, `neg`, `trunc`, `div` (its rounding
modes), `floor_divide`, `true_divide`, `atan2`, `lerp`, `addcmul`, `addcdiv`, `isnan` / `isinf` / `isfinite`,
`nan_to_num`, `logsumexp`, `std`, `any` / `all`, `argmax` / `argmin`, `prod`, `linalg.vector_norm`
/ `norm`, `layer_norm`, `rms_norm`, and the activations
`softplus`, `leaky_relu`, `hardtanh`, `relu6`, `hardsigmoid`, `hardswish`, `elu`, `mish` and
`logsigmoid`. Transcendental ones compute low-precision values in float32, as the core does."""
from __future__ import annotations

import ast
import math
from typing import Any, Callable

import torch
import torch.nn.functional as F

from . import exc
from .values import TVal, compute_dtype, tl_dtype


# atan(t) = t + t**3 * P(t**2) for |t| <= tan(pi/8): P's coefficients, a least-squares fit (float64,
# weighted to relative error, on Chebyshev nodes) whose float32 evaluation errs by 6e-8 relative
ATAN_COEFFICIENTS = (-0.3333331346511841, 0.19998441636562347, -0.1424306482076645, 0.10590773075819016,
                     -0.060713041573762894)
ATAN_REDUCE_ABOVE = math.tan(math.pi / 8)


class TorchFunctionsMixin:
    def torch_functions(self) -> dict[Any, Callable[..., Any]]:
        """Handlers of the module docstring's functions, by the torch callable."""
        table: dict[Any, Callable[..., Any]] = {
            torch.pow: lambda v, exponent: self.binary(ast.Pow(), v, exponent),
            torch.square: self.square,
            torch.sign: self.sign,
            torch.round: self.round_half_even,
            torch.fmod: self.fmod,
            torch.remainder: lambda a, b: self.binary(ast.Mod(), a, b),
            torch.add: lambda a, b, alpha=1: self.binary(ast.Add(), a, self.scaled(b, alpha)),
            torch.sub: lambda a, b, alpha=1: self.binary(ast.Sub(), a, self.scaled(b, alpha)),
            torch.mul: lambda a, b: self.binary(ast.Mult(), a, b),
            torch.neg: lambda v: self.unary_op(ast.USub(), v),
            torch.trunc: lambda v: self.divide(v, 1, rounding_mode="trunc"),
            torch.div: self.divide,
            torch.divide: self.divide,
            torch.true_divide: lambda a, b: self.binary(ast.Div(), a, b),
            torch.floor_divide: lambda a, b: self.binary(ast.FloorDiv(), a, b),
            torch.lerp: self.lerp,
            torch.atan2: self.atan2,
            torch.arctan2: self.atan2,
            torch.addcmul: lambda v, a, b, value=1: self.binary(ast.Add(), v, self.scaled(self.binary(ast.Mult(), a, b), value)),
            torch.addcdiv: lambda v, a, b, value=1: self.binary(ast.Add(), v, self.scaled(self.binary(ast.Div(), a, b), value)),
            torch.isnan: self.isnan,
            torch.isinf: self.isinf,
            torch.isfinite: self.isfinite,
            torch.nan_to_num: self.nan_to_num,
            torch.logsumexp: self.logsumexp,
            torch.std: self.std,
            torch.any: lambda v, dim=None, keepdim=False: self.any_all("max", v, dim, keepdim),
            torch.all: lambda v, dim=None, keepdim=False: self.any_all("min", v, dim, keepdim),
            torch.argmax: lambda v, dim=None, keepdim=False: self.arg_extremum("max", v, dim, keepdim),
            torch.argmin: lambda v, dim=None, keepdim=False: self.arg_extremum("min", v, dim, keepdim),
            torch.clip: lambda v, min=None, max=None: self.clamp(v, min, max),
            torch.prod: lambda v, dim=None, keepdim=False, *, dtype=None: self.reduce("prod", v, dim, keepdim, dtype=dtype),
            torch.linalg.vector_norm: self.vector_norm,
            torch.norm: self.norm,
            F.layer_norm: self.layer_norm,
            F.rms_norm: self.rms_norm,
            F.softplus: self.softplus,
            F.leaky_relu: lambda v, negative_slope=0.01, inplace=False: self.where(
                self.binary(ast.Gt(), v, 0), v, self.binary(ast.Mult(), v, negative_slope)),
            F.hardtanh: lambda v, min_val=-1.0, max_val=1.0, inplace=False: self.clamp(v, min_val, max_val),
            F.relu6: lambda v, inplace=False: self.clamp(v, 0, 6),
            F.hardsigmoid: lambda v, inplace=False: self.clamp(self.binary(ast.Add(), self.binary(ast.Div(), v, 6), 0.5), 0, 1),
            F.hardswish: lambda v, inplace=False: self.binary(
                ast.Mult(), v, self.clamp(self.binary(ast.Add(), self.binary(ast.Div(), v, 6), 0.5), 0, 1)),
            F.elu: self.elu,
            F.mish: lambda v, inplace=False: self.in_float32(v, lambda x: self.binary(
                ast.Mult(), x, self.tanh(self.softplus(x)))),
            F.logsigmoid: lambda v: self.in_float32(v, lambda x: self.unary_op(ast.USub(), self.softplus(self.unary_op(ast.USub(), x)))),
        }
        return table

    def torch_methods(self, base: TVal) -> dict[str, Callable[..., Any]]:
        """The tensor methods of the same functions, on `base`."""
        functions = self.torch_functions()
        names = ("pow", "square", "sign", "round", "fmod", "remainder", "add", "sub", "mul", "neg", "trunc", "div", "divide",
                 "true_divide", "floor_divide", "lerp", "atan2", "arctan2", "addcmul", "addcdiv", "isnan", "isinf",
                 "isfinite", "nan_to_num", "logsumexp", "std", "any", "all", "argmax", "argmin", "clip", "prod", "norm")
        return {name: (lambda *a, _f=functions[getattr(torch, name)], **k: _f(base, *a, **k)) for name in names}

    def in_float32(self, value: Any, compute: Callable[[Any], Any]) -> TVal:
        """`compute` of `value` in float32 where it is of low precision, cast back."""
        value = self.to_tval(value)
        x = self.widened(value)
        return self.to_dtype(compute(x), value.dtype)

    def scaled(self, value: Any, factor: Any) -> Any:
        return value if isinstance(factor, (int, float)) and factor == 1 else self.binary(ast.Mult(), value, factor)

    def square(self, value: Any) -> TVal:
        return self.binary(ast.Mult(), value, value)

    def sign(self, value: Any) -> TVal:
        """-1, 0 or 1 in the value's dtype (0 for NaN, as PyTorch)."""
        value = self.to_tval(value)
        positive = self.to_dtype(self.binary(ast.Gt(), value, 0), value.dtype)
        negative = self.to_dtype(self.binary(ast.Lt(), value, 0), value.dtype)
        return self.binary(ast.Sub(), positive, negative)

    def round_half_even(self, value: Any, decimals: int = 0) -> TVal:
        """torch.round: to the nearest integer, ties to even."""
        if decimals != 0:
            raise self.error(exc.NotSupported, f"torch.round(decimals={decimals}) in device code")
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            return value
        return self.in_float32(value, self._round_float32)

    def _round_float32(self, x: TVal) -> TVal:
        low = self.math("floor", x)
        fraction = self.binary(ast.Sub(), x, low)
        up = self.binary(ast.Add(), low, 1.0)
        odd = self.binary(ast.NotEq(), self.binary(ast.Mod(), low, 2.0), 0.0)
        tie_up = self.binary(ast.BitAnd(), self.binary(ast.Eq(), fraction, 0.5), odd)
        return self.where(self.binary(ast.BitOr(), self.binary(ast.Gt(), fraction, 0.5), tie_up), up, low)

    def fmod(self, a: Any, b: Any) -> TVal:
        """torch.fmod: the remainder with the dividend's sign (Triton's `%`, C's)."""
        a, b = self.to_tval(a), b
        dtype = self.result_dtype([a, b])
        compute = compute_dtype(dtype)
        shape = self.broadcast_shape(a.shape, self.shape_of(b))

        def render(x: list[str]) -> str:
            return f"({x[0]} % {x[1]})" if compute == dtype else f"({x[0]} % {x[1]}).to({tl_dtype(dtype)})"

        return self.make(dtype, shape, render, [self.cast_operand(a, compute), self.cast_operand(b, compute)])

    def divide(self, a: Any, b: Any, *, rounding_mode: str | None = None) -> TVal:
        """torch.div: true division, or the quotient rounded down (`"floor"`, as `//`) or toward
        zero (`"trunc"`: Triton's integer `//`; for floats, computed in float32 for low precision)."""
        if rounding_mode is None:
            return self.binary(ast.Div(), a, b)
        if rounding_mode == "floor":
            return self.binary(ast.FloorDiv(), a, b)
        if rounding_mode != "trunc":
            raise self.error(exc.NotSupported, f"torch.div rounding_mode={rounding_mode!r}; it is None, 'trunc' or 'floor'")
        a = self.to_tval(a)
        dtype = self.result_dtype([a, b])
        if not dtype.is_floating_point:
            return self.make(dtype, self.broadcast_shape(a.shape, self.shape_of(b)), lambda x: f"({x[0]} // {x[1]})",
                             [self.cast_operand(a, dtype), self.cast_operand(b, dtype)])
        compute = compute_dtype(dtype)
        quotient = self.binary(ast.Div(), self.cast_operand(a, compute), self.cast_operand(b, compute))
        rounded = self.where(self.binary(ast.Lt(), quotient, 0), self.math("ceil", quotient), self.math("floor", quotient))
        return self.to_dtype(rounded, dtype)

    def atan2(self, y: Any, x: Any) -> TVal:
        """torch.atan2 in float32 for low precision and integers (Triton has no arctangent): the
        angle of the smaller magnitude over the larger, reduced past tan(pi/8) by
        atan(a) = pi/4 + atan((a - 1) / (a + 1)), an odd polynomial there (least-squares fit,
        6e-8 relative error), then placed in its octant and quadrant by the signs (of zeros too, so
        atan2(0, -0.0) is pi as PyTorch's); NaN where either operand is. Float64 values get this
        float32 accuracy too."""
        dtype = self.float_result([y, x])
        compute = compute_dtype(dtype)
        y, x = self.to_dtype(self.to_tval(y), compute), self.to_dtype(self.to_tval(x), compute)
        ay, ax = self.abs(y), self.abs(x)
        high, low = self.extremum("maximum", ax, ay), self.extremum("minimum", ax, ay)
        ratio = self.where(self.binary(ast.Eq(), high, 0), 0.0,
                           self.where(self.binary(ast.Eq(), low, high), 1.0, self.binary(ast.Div(), low, high)))
        reduced = self.binary(ast.Gt(), ratio, ATAN_REDUCE_ABOVE)
        t = self.where(reduced, self.binary(ast.Div(), self.binary(ast.Sub(), ratio, 1.0), self.binary(ast.Add(), ratio, 1.0)), ratio)
        square = self.binary(ast.Mult(), t, t)
        poly: Any = ATAN_COEFFICIENTS[-1]
        for coefficient in reversed(ATAN_COEFFICIENTS[:-1]):
            poly = self.binary(ast.Add(), self.binary(ast.Mult(), poly, square), coefficient)
        angle = self.binary(ast.Add(), t, self.binary(ast.Mult(), self.binary(ast.Mult(), t, square), poly))
        angle = self.where(reduced, self.binary(ast.Add(), angle, math.pi / 4), angle)
        angle = self.where(self.binary(ast.Gt(), ay, ax), self.binary(ast.Sub(), math.pi / 2, angle), angle)
        angle = self.where(self.signbit(x), self.binary(ast.Sub(), math.pi, angle), angle)
        angle = self.where(self.signbit(y), self.unary_op(ast.USub(), angle), angle)
        nan = self.binary(ast.BitOr(), self.isnan(x), self.isnan(y))
        return self.to_dtype(self.where(nan, float("nan"), angle), dtype)

    def lerp(self, start: Any, end: Any, weight: Any) -> TVal:
        return self.binary(ast.Add(), start, self.binary(ast.Mult(), weight, self.binary(ast.Sub(), end, start)))

    def isnan(self, value: Any) -> TVal:
        return self.binary(ast.NotEq(), value, value)

    def isinf(self, value: Any) -> TVal:
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            return self.binary(ast.NotEq(), value, value)
        return self.binary(ast.Eq(), self.abs(value), float("inf"))

    def isfinite(self, value: Any) -> TVal:
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            return self.binary(ast.Eq(), value, value)
        return self.binary(ast.Lt(), self.abs(value), float("inf"))

    def nan_to_num(self, value: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> TVal:
        """NaN, +inf and -inf replaced (the infinities by the dtype's largest finite values by default)."""
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            return value
        largest = torch.finfo(value.dtype).max
        out = self.where(self.binary(ast.Eq(), value, float("inf")), largest if posinf is None else posinf, value)
        out = self.where(self.binary(ast.Eq(), value, float("-inf")), -largest if neginf is None else neginf, out)
        return self.where(self.isnan(value), nan, out)

    def logsumexp(self, value: Any, dim: Any, keepdim: bool = False) -> TVal:
        """log(sum(exp(x))) over `dim`, shifted by the maximum (a shift of 0 where it is infinite)."""
        def compute(x: TVal) -> TVal:
            top = self.reduce("max", x, dim, keepdim=True)
            shift = self.where(self.isinf(top), 0.0, top)
            total = self.reduce("sum", self.math("exp", self.binary(ast.Sub(), x, shift)), dim, keepdim=True)
            out = self.binary(ast.Add(), self.math("log", total), shift)
            return out if keepdim else self.squeeze(out, dim)

        return self.in_float32(value, compute)

    def std(self, value: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: Any = None) -> TVal:
        variance = self.var_mean(value, dim, unbiased, keepdim, correction=correction)[0]
        return self.math("sqrt", variance)

    def any_all(self, kind: str, value: Any, dim: Any, keepdim: bool) -> TVal:
        """torch.any (the maximum of the truth values) and torch.all (their minimum)."""
        truth = self.to_dtype(self.truth(value), torch.int32)
        return self.binary(ast.NotEq(), self.reduce(kind, truth, dim, keepdim), 0)

    def arg_extremum(self, kind: str, value: Any, dim: Any, keepdim: bool) -> TVal:
        if dim is None:
            raise self.error(exc.NotSupported, f"torch.arg{kind} over all dims in device code; give a dim")
        value = self.to_tval(value)
        self.require_eager(value, f"torch.arg{kind}")  # its index needs the whole dim at once
        return self.max_min(kind, value, dim, keepdim)[1]

    def vector_norm(self, value: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> TVal:
        """torch.linalg.vector_norm over `dim` (all dims by default), in float32 for low precision:
        the largest (ord inf) or smallest (-inf) magnitude, the count of nonzeros (0), or
        (sum |x|**ord)**(1 / ord)."""
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            raise self.error(exc.NotSupported, f"a vector norm of {value.dtype} values; PyTorch's takes floating ones")
        x = self.widened(value)
        size = self.abs(x)
        if ord in (float("inf"), float("-inf")):
            out = self.reduce("max" if ord > 0 else "min", size, dim, keepdim)
        elif ord == 0:
            out = self.reduce("sum", self.to_dtype(self.binary(ast.NotEq(), size, 0), x.dtype), dim, keepdim)
        elif ord == 1:
            out = self.reduce("sum", size, dim, keepdim)
        elif ord == 2:
            out = self.math("sqrt", self.reduce("sum", self.binary(ast.Mult(), x, x), dim, keepdim))
        else:
            total = self.reduce("sum", self.binary(ast.Pow(), size, ord), dim, keepdim)
            out = self.binary(ast.Pow(), total, 1.0 / ord)
        return self.to_dtype(out, dtype or value.dtype)

    def norm(self, value: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> TVal:
        """torch.norm: a vector norm, the Frobenius norm being its 2-norm."""
        if p == "nuc" or not isinstance(p, (int, float, str)) or isinstance(p, str) and p != "fro":
            raise self.error(exc.NotSupported, f"torch.norm with p={p!r} in device code; it takes a number or 'fro'")
        return self.vector_norm(value, 2 if p == "fro" else p, dim, keepdim, dtype=dtype)

    def normalized_axes(self, value: TVal, normalized_shape: Any) -> list[int]:
        """The trailing axes of `value` that F.layer_norm / F.rms_norm's `normalized_shape` names."""
        count = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1
        if not 0 < count <= len(value.shape):
            raise self.error(exc.ShapeMismatch, f"normalized_shape of {count} dims for a value of {len(value.shape)}")
        return list(range(len(value.shape) - count, len(value.shape)))

    def layer_norm(self, value: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> TVal:
        """F.layer_norm over the trailing `normalized_shape` dims, in float32 for low precision:
        (x - mean) / sqrt(biased variance + eps), times `weight`, plus `bias`."""
        value = self.to_tval(value)
        axes = self.normalized_axes(value, normalized_shape)
        x = self.widened(value)
        variance, mean = self.var_mean(x, axes, keepdim=True, correction=0)
        out = self.binary(ast.Mult(), self.binary(ast.Sub(), x, mean), self.math("rsqrt", self.binary(ast.Add(), variance, eps)))
        if weight is not None:
            out = self.binary(ast.Mult(), out, self.to_dtype(self.to_tval(weight), x.dtype))
        if bias is not None:
            out = self.binary(ast.Add(), out, self.to_dtype(self.to_tval(bias), x.dtype))
        return self.to_dtype(out, value.dtype)

    def rms_norm(self, value: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> TVal:
        """F.rms_norm over the trailing `normalized_shape` dims as PyTorch composes it: x / sqrt(mean
        of squares + eps) in float32 for low precision (eps defaults to the dtype's machine epsilon),
        rounded to the input's dtype, then times `weight`."""
        value = self.to_tval(value)
        axes = self.normalized_axes(value, normalized_shape)
        eps = torch.finfo(value.dtype).eps if eps is None else eps
        x = self.widened(value)
        mean_square = self.reduce("mean", self.binary(ast.Mult(), x, x), axes, keepdim=True)
        out = self.to_dtype(self.binary(ast.Mult(), x, self.math("rsqrt", self.binary(ast.Add(), mean_square, eps))), value.dtype)
        return out if weight is None else self.binary(ast.Mult(), out, weight)

    def softplus(self, value: Any, beta: float = 1.0, threshold: float = 20.0) -> TVal:
        """log(1 + exp(beta x)) / beta, and x itself where beta x exceeds `threshold`."""
        def compute(x: TVal) -> TVal:
            scaled = self.scaled(x, beta)
            soft = self.log1p(self.math("exp", scaled))
            return self.where(self.binary(ast.Gt(), scaled, threshold), x, self.binary(ast.Div(), soft, beta))

        return self.in_float32(value, compute)

    def elu(self, value: Any, alpha: float = 1.0, inplace: bool = False) -> TVal:
        return self.in_float32(value, lambda x: self.where(
            self.binary(ast.Gt(), x, 0), x, self.binary(ast.Mult(), self.expm1(x), alpha)))
