"""Elementwise torch functions of device code beyond pointwise.py's core and torch_functions.py, as
compositions of Triton's exp, log, sqrt, sin and cos (its libdevice functions do not run under
the interpreter the tests use): `log1p` and `expm1` accurate near 0, `log10`, `tan`, `sinh`,
`cosh`, `tanh` (accurate near 0), `asinh`, `acosh`, `atanh`, `atan`, `asin`, `acos` (and their `arc*` names), `hypot`,
`copysign`, `signbit`, `frac`, `fmax` / `fmin` (NaN only where both are), `xlogy`, `heaviside`,
`logit`, `erfinv`, `rad2deg` / `deg2rad`, `clamp_min` / `clamp_max`, `rsub`, `sgn`, `tril` / `triu`, the function forms of the
comparisons (`eq`, `ne`, `lt`, `le`, `gt`, `ge` and their long names), `logical_and` / `or` /
`xor` / `not`, `bitwise_and` / `or` / `xor` / `not`, `count_nonzero`, `aminmax`, and the
activations `selu`, `celu`, `softsign`, `tanhshrink`, `threshold` and `F.normalize`. Each has
PyTorch's semantics at infinities, NaN and signed zeros; low-precision floats and integers compute in
float32, as the core's math functions do. The math functions are methods too (`v.cos()`)."""
from __future__ import annotations

import ast
import math
from typing import Any, Callable

import torch
import torch.nn.functional as F

from . import exc
from .values import TVal, compute_dtype, place

LN2 = math.log(2.0)
# past this magnitude, sinh and cosh are exp(|x|) / 2 to float32 precision, and asinh / acosh
# are log(2|x|)
LARGE_HYPERBOLIC = 20.0
LARGE_INVERSE_HYPERBOLIC = 2.0**12
# erfinv(y) / y in float32 as polynomials (lowest power first) of w = -log(1 - y^2): in w - 2.5 for
# w < 5 (|y| < 0.9966), in sqrt(w) - 3 above (to float32's last y below 1, w 15.9); least-squares
# fits of relative error against torch.special.erfinv in float64, within 3 ulp of it over float32
ERFINV_CENTRAL = (1.5014094114303589, 0.24664027988910675, -0.004177388269454241, -0.0012527258368209004,
                  0.00021834571089129895, -4.972750048182206e-06, -3.463049779384164e-06, 4.682014491663722e-07,
                  2.3261462089863016e-08, -8.936902773371003e-09)
ERFINV_TAIL = (2.832976818084717, 1.001675009727478, 0.0094454949721694, -0.007637765258550644, 0.005685125477612019,
               -0.003594775451347232, 0.0014901345130056143, -6.249816215131432e-05, -0.000313790631480515,
               0.0001200541082653217)
# float64 erfinv: past this w (float32's range) the guess is erfc's leading terms solved for x
ERFINV_FIT_END = 16.0
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
COMPARISON_FUNCTIONS = {
    "eq": ast.Eq, "ne": ast.NotEq, "lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE,
    "not_equal": ast.NotEq, "less": ast.Lt, "less_equal": ast.LtE, "greater": ast.Gt, "greater_equal": ast.GtE,
}
BITWISE_FUNCTIONS = {"bitwise_and": ast.BitAnd, "bitwise_or": ast.BitOr, "bitwise_xor": ast.BitXor}
METHOD_NAMES = ("log1p", "expm1", "log10", "tan", "tanh", "sinh", "cosh", "asinh", "acosh", "atanh", "atan", "asin", "acos",
                "arcsinh", "arccosh", "arctanh", "arctan", "arcsin", "arccos", "hypot", "copysign", "signbit", "frac",
                "fmax", "fmin", "xlogy", "heaviside", "logit", "erfinv", "rad2deg", "deg2rad", "clamp_min", "clamp_max",
                "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
                "bitwise_xor", "bitwise_not", "count_nonzero", "aminmax", "sgn", "tril", "triu", *COMPARISON_FUNCTIONS)
CORE_MATH_METHODS = ("sin", "cos", "erf", "log2", "reciprocal", "floor", "ceil")


class MinMax(tuple):
    """Result of `torch.aminmax`: (min, max) with attribute access."""

    @property
    def min(self) -> Any:
        return self[0]

    @property
    def max(self) -> Any:
        return self[1]


class ElementaryMixin:
    def elementary_functions(self) -> dict[Any, Callable[..., Any]]:
        """Handlers of the module docstring's functions, by the torch callable."""
        table: dict[Any, Callable[..., Any]] = {
            torch.log1p: lambda v: self.in_compute(v, self.log1p),
            torch.expm1: lambda v: self.in_compute(v, self.expm1),
            torch.log10: lambda v: self.in_compute(v, lambda x: self.mul(self.math("log", x), 1.0 / math.log(10.0))),
            torch.tan: lambda v: self.in_compute(v, lambda x: self.div(self.math("sin", x), self.math("cos", x))),
            torch.tanh: self.tanh,
            torch.sinh: lambda v: self.in_compute(v, self.sinh),
            torch.cosh: lambda v: self.in_compute(v, self.cosh),
            torch.asinh: lambda v: self.in_compute(v, self.asinh),
            torch.acosh: lambda v: self.in_compute(v, self.acosh),
            torch.atanh: lambda v: self.in_compute(v, self.atanh),
            torch.atan: lambda v: self.atan2(v, self.full_like(v, 1)),
            torch.asin: lambda v: self.in_compute(v, lambda x: self.atan2(x, self.cosine_of_sine(x))),
            torch.acos: lambda v: self.in_compute(v, lambda x: self.atan2(self.cosine_of_sine(x), x)),
            torch.hypot: self.hypot,
            torch.copysign: self.copysign,
            torch.signbit: self.signbit,
            torch.frac: lambda v: self.sub(v, self.divide(v, 1, rounding_mode="trunc")),
            torch.fmax: lambda a, b: self.ignoring_nan("maximum", a, b),
            torch.fmin: lambda a, b: self.ignoring_nan("minimum", a, b),
            torch.xlogy: self.xlogy,
            torch.heaviside: self.heaviside,
            torch.logit: self.logit,
            torch.erfinv: self.erfinv,
            torch.rad2deg: lambda v: self.mul(self.floating(v), 180.0 / math.pi),
            torch.deg2rad: lambda v: self.mul(self.floating(v), math.pi / 180.0),
            torch.clamp_min: lambda v, min: self.clamp(v, min, None),
            torch.clamp_max: lambda v, max: self.clamp(v, None, max),
            torch.rsub: lambda a, b, alpha=1: self.sub(b, self.scaled(a, alpha)),
            torch.logical_and: lambda a, b: self.binary(ast.BitAnd(), self.truth(a), self.truth(b)),
            torch.logical_or: lambda a, b: self.binary(ast.BitOr(), self.truth(a), self.truth(b)),
            torch.logical_xor: lambda a, b: self.binary(ast.NotEq(), self.truth(a), self.truth(b)),
            torch.logical_not: lambda v: self.binary(ast.Eq(), v, 0),
            torch.bitwise_not: self.bitwise_not,
            torch.count_nonzero: lambda v, dim=None: self.to_dtype(self.reduce("sum", self.to_dtype(self.truth(v), torch.int32), dim),
                                                                   torch.int64),
            torch.aminmax: lambda v, *, dim=None, keepdim=False: MinMax((self.reduce("min", v, dim, keepdim),
                                                                         self.reduce("max", v, dim, keepdim))),
            F.selu: lambda v, inplace=False: self.mul(self.elu(v, SELU_ALPHA), SELU_SCALE),
            F.celu: lambda v, alpha=1.0, inplace=False: self.celu(v, alpha),
            F.softsign: lambda v: self.div(v, self.add(self.abs(v), 1)),
            F.tanhshrink: lambda v: self.sub(v, self.tanh(v)),
            F.threshold: lambda v, threshold, value, inplace=False: self.where(self.binary(ast.LtE(), v, threshold), value, v),
            F.normalize: self.normalize,
            torch.sgn: self.sign,
            torch.tril: lambda v, diagonal=0: self.triangle(v, diagonal, lower=True),
            torch.triu: lambda v, diagonal=0: self.triangle(v, diagonal, lower=False),
        }
        for name, operator in {**COMPARISON_FUNCTIONS, **BITWISE_FUNCTIONS}.items():
            table[getattr(torch, name)] = lambda a, b, _op=operator: self.binary(_op(), a, b)
        for long_name, short_name in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
                                      ("arctan", "atan"), ("arcsin", "asin"), ("arccos", "acos")):
            table[getattr(torch, long_name)] = table[getattr(torch, short_name)]
        table[torch.special.erfinv] = table[torch.erfinv]
        return table

    def elementary_methods(self, base: TVal) -> dict[str, Callable[..., Any]]:
        """The tensor methods of the same functions and of the core's math functions, on `base`."""
        functions = self.elementary_functions()
        methods = {name: (lambda *a, _f=functions[getattr(torch, name)], **k: _f(base, *a, **k)) for name in METHOD_NAMES}
        methods.update({name: (lambda _n=name: self.math(_n, base)) for name in CORE_MATH_METHODS})
        return methods

    # ------------------------------------------------------------------ arithmetic shorthands
    def add(self, a: Any, b: Any) -> Any:
        return self.binary(ast.Add(), a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self.binary(ast.Sub(), a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self.binary(ast.Mult(), a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self.binary(ast.Div(), a, b)

    def floating(self, value: Any) -> TVal:
        """`value`, integers as float32 (PyTorch's result type of these functions)."""
        value = self.to_tval(value)
        return value if value.dtype.is_floating_point else self.to_dtype(value, torch.float32)

    def in_compute(self, value: Any, compute: Callable[[TVal], TVal]) -> TVal:
        """`compute` of `value` as in_float32, integers taken as float32 first (the float result
        dtype of these functions)."""
        return self.in_float32(self.floating(value), compute)

    def truth(self, value: Any) -> Any:
        return self.binary(ast.NotEq(), value, 0)

    # ------------------------------------------------------------------ exponentials and logarithms
    def log1p(self, x: TVal) -> TVal:
        """log(1 + x), accurate near 0: log(u) * x / (u - 1) for u = 1 + x rounded (the quotient
        corrects the rounding of u), x where u rounds to 1, +inf at +inf."""
        u = self.add(x, 1.0)
        corrected = self.mul(self.math("log", u), self.div(x, self.sub(u, 1.0)))
        return self.where(self.binary(ast.Eq(), u, 1.0), x, self.where(self.binary(ast.Eq(), u, float("inf")), u, corrected))

    def expm1(self, x: TVal) -> TVal:
        """exp(x) - 1, accurate near 0: (u - 1) * x / log(u) for u = exp(x) rounded, x where u
        rounds to 1, -1 where u - 1 does, u where u is infinite."""
        u = self.math("exp", x)
        less_one = self.sub(u, 1.0)
        corrected = self.mul(less_one, self.div(x, self.math("log", u)))  # divided first: no overflow below exp's
        corrected = self.where(self.binary(ast.Eq(), less_one, -1.0), -1.0, corrected)
        return self.where(self.binary(ast.Eq(), u, 1.0), x, self.where(self.isinf(u), u, corrected))

    def xlogy(self, x: Any, y: Any) -> TVal:
        """x * log(y), 0 where x is 0 and y is not NaN."""
        dtype = self.float_result([x, y])
        x, y = self.to_dtype(self.to_tval(x), compute_dtype(dtype)), self.to_dtype(self.to_tval(y), compute_dtype(dtype))
        product = self.mul(x, self.math("log", y))
        zero = self.binary(ast.BitAnd(), self.binary(ast.Eq(), x, 0), self.binary(ast.Eq(), y, y))
        return self.to_dtype(self.where(zero, 0.0, product), dtype)

    def logit(self, value: Any, eps: float | None = None) -> TVal:
        """log(x / (1 - x)); near x = 1/2, where that ratio is near 1, log1p((2x - 1) / (1 - x))
        (2x - 1 and 1 - x exact there)."""
        def compute(x: TVal) -> TVal:
            if eps is not None:
                x = self.clamp(x, eps, 1.0 - eps)
            rest = self.sub(1.0, x)
            far = self.math("log", self.div(x, rest))
            near = self.log1p(self.div(self.sub(self.mul(x, 2.0), 1.0), rest))
            middle = self.binary(ast.BitAnd(), self.binary(ast.Gt(), x, 0.25), self.binary(ast.Lt(), x, 0.75))
            return self.where(middle, near, far)

        return self.in_compute(value, compute)

    def erfinv(self, value: Any) -> TVal:
        """The inverse error function: y * P(w) for w = -log((1 - y)(1 + y)) (ERFINV_CENTRAL,
        ERFINV_TAIL), float32's precision, refined in float64 (erfinv_refined); +-inf at +-1, NaN
        past them."""
        def compute(y: TVal) -> TVal:
            w = self.unary_op(ast.USub(), self.math("log", self.mul(self.sub(1.0, y), self.add(1.0, y))))
            central = self.polynomial(self.sub(w, 2.5), ERFINV_CENTRAL)
            tail = self.polynomial(self.sub(self.math("sqrt", w), 3.0), ERFINV_TAIL)
            inverse = self.mul(self.where(self.binary(ast.Lt(), w, 5.0), central, tail), y)
            if y.dtype == torch.float64:
                inverse = self.erfinv_refined(y, w, inverse)
            return self.where(self.binary(ast.Eq(), self.abs(y), 1.0), self.copysign(float("inf"), y), inverse)

        return self.in_compute(value, compute)

    def erfinv_refined(self, y: TVal, w: TVal, guess: TVal) -> TVal:
        """float64 erfinv from the float32 fit's `guess` (relative error 3e-7; past ERFINV_FIT_END,
        where |y| is beyond float32's last value below 1, x^2 = w + ln 2 - log(sqrt(pi) x) -
        1 / (2x^2) from erfc's asymptotic series, iterated twice from sqrt(w): 4e-5) by two
        Newton steps on erf, as PyTorch refines its own. Near +-1 erf is flat, so the result is as
        certain as erf's rounding over its slope there, PyTorch's too."""
        far = self.math("sqrt", w)
        for _ in range(2):
            correction = self.add(self.math("log", self.mul(far, math.sqrt(math.pi))), self.div(0.5, self.mul(far, far)))
            far = self.math("sqrt", self.sub(self.add(w, LN2), correction))
        x = self.where(self.binary(ast.Lt(), w, ERFINV_FIT_END), guess, self.copysign(far, y))
        for _ in range(2):
            slope = self.mul(self.math("exp", self.unary_op(ast.USub(), self.mul(x, x))), 2.0 / math.sqrt(math.pi))
            x = self.sub(x, self.div(self.sub(self.math("erf", x), y), slope))
        return x

    def polynomial(self, t: TVal, coefficients: tuple) -> TVal:
        """sum(c_i * t**i) by Horner's rule, `coefficients` lowest power first."""
        out: Any = coefficients[-1]
        for c in coefficients[-2::-1]:
            out = self.add(self.mul(out, t), c)
        return out

    # ------------------------------------------------------------------ hyperbolic and inverse
    def sinh(self, x: TVal) -> TVal:
        """sinh from expm1(|x|) (no cancellation near 0); exp(|x| - ln 2) for large |x|, which
        stays finite where exp(|x|) overflows."""
        size = self.abs(x)
        e = self.expm1(size)
        small = self.mul(self.add(e, self.div(e, self.add(e, 1.0))), 0.5)
        magnitude = self.where(self.binary(ast.Gt(), size, LARGE_HYPERBOLIC), self.math("exp", self.sub(size, LN2)), small)
        return self.copysign(magnitude, x)

    def tanh(self, value: Any) -> TVal:
        """tanh(|x|) = -t / (t + 2) for t = expm1(-2|x|) (accurate near 0, 1 where exp underflows),
        with x's sign."""
        def compute(x: TVal) -> TVal:
            t = self.expm1(self.mul(self.abs(x), -2.0))
            return self.copysign(self.div(self.unary_op(ast.USub(), t), self.add(t, 2.0)), x)

        return self.in_compute(value, compute)

    def cosh(self, x: TVal) -> TVal:
        size = self.abs(x)
        e = self.math("exp", size)
        small = self.mul(self.add(e, self.div(1.0, e)), 0.5)
        return self.where(self.binary(ast.Gt(), size, LARGE_HYPERBOLIC), self.math("exp", self.sub(size, LN2)), small)

    def asinh(self, x: TVal) -> TVal:
        """sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); log(2|x|) past 2^12."""
        size = self.abs(x)
        square = self.mul(size, size)
        near = self.log1p(self.add(size, self.div(square, self.add(self.math("sqrt", self.add(square, 1.0)), 1.0))))
        far = self.add(self.math("log", size), LN2)
        magnitude = self.where(self.binary(ast.Gt(), size, LARGE_INVERSE_HYPERBOLIC), far, near)
        return self.copysign(magnitude, x)

    def acosh(self, x: TVal) -> TVal:
        """log1p(t + sqrt(t * (t + 2))) for t = x - 1 (exact near 1); log(2x) past 2^12; NaN
        below 1."""
        t = self.sub(x, 1.0)
        near = self.log1p(self.add(t, self.math("sqrt", self.mul(t, self.add(t, 2.0)))))
        far = self.add(self.math("log", x), LN2)
        return self.where(self.binary(ast.Gt(), x, LARGE_INVERSE_HYPERBOLIC), far, near)

    def atanh(self, x: TVal) -> TVal:
        return self.mul(self.log1p(self.div(self.mul(x, 2.0), self.sub(1.0, x))), 0.5)

    def cosine_of_sine(self, x: TVal) -> TVal:
        """sqrt(1 - x^2) as sqrt((1 - x)(1 + x)), exact near |x| = 1; NaN past it."""
        return self.math("sqrt", self.mul(self.sub(1.0, x), self.add(1.0, x)))

    # ------------------------------------------------------------------ signs, magnitudes, extremes
    def float_result(self, values: list) -> torch.dtype:
        dtype = self.result_dtype(values)
        return dtype if dtype.is_floating_point else torch.float32

    def hypot(self, a: Any, b: Any) -> TVal:
        """sqrt(a^2 + b^2) without overflow: the larger magnitude times sqrt(1 + r^2), r the ratio;
        inf where either is infinite (NaN or not), 0 where both are 0."""
        dtype = self.float_result([a, b])
        compute = compute_dtype(dtype)
        a, b = self.abs(self.to_dtype(self.to_tval(a), compute)), self.abs(self.to_dtype(self.to_tval(b), compute))
        high, low = self.extremum("maximum", a, b), self.extremum("minimum", a, b)
        ratio = self.div(low, high)
        scaled = self.mul(high, self.math("sqrt", self.add(self.mul(ratio, ratio), 1.0)))
        scaled = self.where(self.binary(ast.Eq(), high, 0), 0.0, scaled)
        nan = self.binary(ast.BitOr(), self.isnan(a), self.isnan(b))
        scaled = self.where(nan, float("nan"), scaled)
        infinite = self.binary(ast.BitOr(), self.isinf(a), self.isinf(b))
        return self.to_dtype(self.where(infinite, float("inf"), scaled), dtype)

    def signbit(self, value: Any) -> TVal:
        """Whether the sign bit is set (-0.0 and negative NaN too, for floats)."""
        value = self.to_tval(value)
        if not value.dtype.is_floating_point:
            return self.binary(ast.Lt(), value, 0)
        bits = value.dtype.itemsize * 8
        return self.make(torch.bool, value.shape, lambda a: f"({a[0]}.to(tl.int{bits}, bitcast=True) < 0)", [value], "signbit")

    def copysign(self, magnitude: Any, sign: Any) -> TVal:
        dtype = self.float_result([magnitude, sign])
        size = self.abs(self.to_dtype(self.to_tval(magnitude), compute_dtype(dtype)))
        sign = self.to_tval(sign)
        return self.to_dtype(self.where(self.signbit(sign), self.unary_op(ast.USub(), size), size), dtype)

    def ignoring_nan(self, kind: str, a: Any, b: Any) -> TVal:
        """torch.fmax / fmin: the other operand where one is NaN."""
        both = self.extremum(kind, a, b)
        if not self.result_dtype([a, b]).is_floating_point:
            return both
        return self.where(self.isnan(a), b, self.where(self.isnan(b), a, both))

    def heaviside(self, value: Any, values: Any) -> TVal:
        """1 above 0, `values` at 0, else 0 (NaN too, as PyTorch's)."""
        dtype = self.result_dtype([value, values])
        step = self.where(self.binary(ast.Gt(), value, 0), 1, 0)
        return self.to_dtype(self.where(self.binary(ast.Eq(), value, 0), values, step), dtype)

    def bitwise_not(self, value: Any) -> TVal:
        value = self.to_tval(value)
        if value.dtype.is_floating_point:
            raise self.error(exc.TypeMismatch, f"torch.bitwise_not of {value.dtype} values; it takes integers and bool")
        return self.unary_op(ast.Invert(), value)

    def triangle(self, value: Any, diagonal: Any, lower: bool) -> TVal:
        """torch.tril / triu over the last two dims: elements whose column minus row is at most
        (tril) or at least (triu) `diagonal` stay, the others are 0; rows and columns count
        within the value (a tile's from its first element, as PyTorch's of that slice)."""
        value = self.to_tval(value)
        rank = len(value.shape)
        if rank < 2:
            raise self.error(exc.ShapeMismatch, f"torch.{'tril' if lower else 'triu'} of a rank-{rank} value; it takes at least 2 dims")
        rows = place(f"tl.arange(0, {value.shape[-2].size_expr})", [rank - 2], rank)
        columns = place(f"tl.arange(0, {value.shape[-1].size_expr})", [rank - 1], rank)
        keep = f"({columns} - {rows} {'<=' if lower else '>='} {self.atom(diagonal)})"
        return self.make(value.dtype, value.shape, lambda a: f"tl.where({keep}, {a[0]}, 0)", [value], "triangle")

    # ------------------------------------------------------------------ activations
    def celu(self, value: Any, alpha: float = 1.0) -> TVal:
        """max(0, x) + min(0, alpha * expm1(x / alpha))."""
        def compute(x: TVal) -> TVal:
            negative = self.mul(self.expm1(self.div(x, alpha)), alpha)
            return self.where(self.binary(ast.Gt(), x, 0), x, negative)

        return self.in_compute(value, compute)

    def normalize(self, value: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> TVal:
        """F.normalize: `value` over its p-norm along `dim`, the norm at least `eps`."""
        norm = self.vector_norm(value, p, dim, keepdim=True)
        return self.div(value, self.extremum("maximum", norm, eps))
