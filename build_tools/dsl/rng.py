"""Random numbers in device code: `torch.rand_like` / `randn_like`, `torch.rand` / `randn` of tile
and integer sizes, `F.dropout` / `torch.dropout`, and Helion's `hl.rand(shape, seed)` /
`hl.randint(shape, low, high, seed)`, lowered to Triton's Philox generator (`tl.rand` / `tl.randn`
/ `tl.randint(seed, offsets)`).

Seed. torch's functions take no seed in device code: the launcher draws one per launch of the
kernel, a 31-bit integer from torch's default CPU generator (module.HELPERS["_rng_seed"]; no device
sync), so `torch.manual_seed` makes calls reproducible and consecutive calls differ. The launcher
passes it as two floats of 15 and 16 bits (exact in float32), not as an int: the launch paths key
their compiled-kernel cache on each int argument's value (launch_helpers._launch_key), which a
fresh seed would miss on every call. A launcher that draws a seed is not replayable (replayable.py
refuses its `_rng_seed()` call), so a recorded call never replays a stale seed. Each call site of
the kernel keys Philox with (seed, site number): the site number is the key's high word, so the
sites draw independent streams. `hl.rand` and `hl.randint` use the seed they are given as the key
(a pure function of seed and position, as in Helion).

Offsets. The Philox counter of an element is its linear index over the launch's iteration space:
the mixed-radix number whose digits are, outermost first, the first index of the current tile (or
the grid index) of every open loop (the top-level loop, then the device loops around the call)
whose dimension is not an axis of the value, then each axis' index: the global index vector of an
open loop's tile (radix: the loop's end), a whole dim's index (radix: its size), or positions
0..n-1 of any other dim. Different programs, inner-loop iterations and elements never share an
offset (masked lanes may, and do not matter), and values whose axes are all loop dims get the same
numbers under every config. The radix of a loop whose end is a device value is 2**31 (any int32
index is below it). Offsets are int64 (Philox takes their high word as a second counter word)."""
from __future__ import annotations

import ast
from typing import Any

import torch

from . import exc
from .values import ONE, HostScalar, HostTensor, RDim, TileVal, TVal, place, size_arguments, tl_dtype

RANDOM_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# bits of the uniform grid that low-precision `rand` values keep, so that none rounds up to 1.0
UNIFORM_BITS = {torch.float16: 11, torch.bfloat16: 8}
UNKNOWN_EXTENT = str(2**31)  # the radix of a loop whose end is a device value


class RandomMixin:
    def init_random(self) -> None:
        self.rng_seed: str | None = None  # the kernel's per-launch seed once a random call needs it
        self.rng_sites: dict[ast.AST, int] = {}  # random call site -> its number

    # ------------------------------------------------------------------ torch's functions
    def random_like(self, node: ast.AST, kind: str, like: Any, dtype: Any = None, **kwargs: Any) -> TVal:
        """torch.rand_like / randn_like(like, dtype=...): a value of `like`'s shape (and dtype)."""
        if isinstance(like, (HostTensor, TileVal)) or not isinstance(like, (TVal, HostScalar, int, float)):
            raise self.error(exc.NotSupported, f"torch.{kind}_like of a {type(like).__name__}; pass a device "
                             "value (a tensor indexed by tiles)", node)
        like = self.to_tval(like)
        return self.implicit_random(node, kind, like.shape, dtype or like.dtype, f"torch.{kind}_like", kwargs)

    def random_sized(self, node: ast.AST, kind: str, *sizes: Any, dtype: Any = None, **kwargs: Any) -> TVal:
        """torch.rand / randn(*sizes) or ([sizes]): sizes are tiles, registered block sizes and host
        integers (as hl.zeros takes them)."""
        sizes = size_arguments(sizes)
        if "size" in kwargs:
            sizes = tuple(kwargs.pop("size"))
        return self.implicit_random(node, kind, self.shape_from_sizes(list(sizes)), dtype or torch.float32,
                                    f"torch.{kind}", kwargs)

    def implicit_random(self, node: ast.AST, kind: str, shape: tuple, dtype: Any, what: str, kwargs: dict) -> TVal:
        for name, value in kwargs.items():
            if name in ("device", "layout", "memory_format", "pin_memory") or (name == "requires_grad" and not value):
                continue
            if name in ("generator", "out") and value is None:
                continue
            why = {"generator": "the kernel draws its seed from torch's default generator, per launch",
                   "out": "device code returns values; store them into a host tensor",
                   "requires_grad": "device code does not record gradients"}.get(name, "unknown argument")
            raise self.error(exc.NotSupported, f"{what}({name}=...) in device code: {why}", node)
        if not isinstance(dtype, torch.dtype) or dtype not in RANDOM_DTYPES:
            raise self.error(exc.NotSupported, f"{what} of dtype {dtype} in device code; random values are "
                             f"floating point ({', '.join(str(d) for d in RANDOM_DTYPES)})", node)
        seed = self.launch_seed()
        site = self.random_site(node)
        key = seed if site == 0 else f"({seed} + {site << 32})"
        value = self.random_value(kind, key, shape)
        return self.random_to_dtype(kind, value, dtype)

    def dropout(self, node: ast.AST, value: Any, p: Any = 0.5, training: Any = True, inplace: bool = False) -> TVal:
        """F.dropout / torch.dropout: each element zeroed where a uniform of the launch's seed (as
        torch.rand_like draws it) is below `p`, the others scaled by 1 / (1 - p); `value` itself
        when not training or at p = 0. `training` is a compile-time bool; `p` a number in [0, 1]
        or a host scalar."""
        if inplace:
            raise self.error(exc.NotSupported, "F.dropout(inplace=True) in device code: device values are not "
                             "changed in place; use the result", node)
        if not isinstance(training, bool):
            raise self.error(exc.NotSupported, "F.dropout's training must be a compile-time bool in device code", node)
        if isinstance(p, bool) or not isinstance(p, (int, float, HostScalar)):
            raise self.error(exc.NotSupported, f"F.dropout's p must be a number or a host scalar, got {type(p).__name__}", node)
        if isinstance(p, (int, float)) and not 0 <= p <= 1:
            raise self.error(exc.ShapeMismatch, f"F.dropout: probability {p} is not between 0 and 1", node)
        value = self.to_tval(value)
        if not training or (isinstance(p, (int, float)) and p == 0):
            return value
        if isinstance(p, (int, float)) and p == 1:  # PyTorch multiplies by zero (NaN stays NaN)
            return self.to_dtype(self.binary(ast.Mult(), value, 0.0), value.dtype)
        uniform = self.implicit_random(node, "rand", value.shape, torch.float32, "F.dropout", {})
        scale = self.binary(ast.Div(), 1.0, self.binary(ast.Sub(), 1.0, p))
        dropped = self.binary(ast.Lt(), uniform, p)
        return self.where(dropped, 0.0, self.to_dtype(self.binary(ast.Mult(), value, scale), value.dtype))

    # ------------------------------------------------------------------ Helion's hl.rand / hl.randint
    def hl_rand(self, node: ast.AST, shape: Any, seed: Any, device: Any = None) -> TVal:
        """hl.rand(shape, seed): float32 values uniform in [0, 1), a function of `seed` and position."""
        return self.random_value("rand", self.explicit_seed(seed, node), self.shape_from_sizes(shape))

    def hl_randint(self, node: ast.AST, shape: Any, low: Any, high: Any, seed: Any, device: Any = None) -> TVal:
        """hl.randint(shape, low, high, seed): int32 values uniform in [low, high)."""
        for bound in (low, high):
            if isinstance(bound, bool) or not isinstance(bound, (int, HostScalar)) or \
                    (isinstance(bound, HostScalar) and bound.dtype.is_floating_point):
                raise self.error(exc.NotSupported, "hl.randint's low and high are host integers", node)
        if isinstance(low, int) and isinstance(high, int) and low >= high:
            raise self.error(exc.NotSupported, f"hl.randint: low ({low}) must be less than high ({high})", node)
        bits = self.random_value("randint", self.explicit_seed(seed, node), self.shape_from_sizes(shape))
        span = f"{high - low}" if isinstance(low, int) and isinstance(high, int) else \
            f"({self.atom(high)} - {self.atom(low)}).to(tl.uint32)"
        return self.make(torch.int32, bits.shape, lambda a: f"({a[0]} % {span}).to(tl.int32) + {self.atom(low)}", [bits])

    def explicit_seed(self, seed: Any, node: ast.AST) -> str:
        """The Triton text of hl.rand's `seed`: a host integer, an integer device scalar, or a
        one-element integer tensor (read by the kernel)."""
        if isinstance(seed, HostTensor):
            if seed.meta.numel() != 1 or seed.meta.dtype.is_floating_point:
                raise self.error(exc.NotSupported, "hl.rand's seed tensor holds one integer", node)
            seed = self.load(seed, [0] * seed.meta.dim(), None, node)
        if isinstance(seed, bool) or not isinstance(seed, (int, HostScalar, TVal)) or \
                (not isinstance(seed, int) and seed.dtype.is_floating_point) or \
                (isinstance(seed, TVal) and seed.shape not in ((), (ONE,))):
            raise self.error(exc.NotSupported, f"hl.rand's seed is an integer, got {type(seed).__name__}", node)
        if isinstance(seed, TVal) and seed.shape:
            seed = self.reshape_to(seed, ())
        return self.atom(seed)

    # ------------------------------------------------------------------ lowering
    def launch_seed(self) -> str:
        """The kernel's per-launch seed (an int64 scalar), made on its first random call: the
        launcher draws it (`_rng_seed()`) before the launch and passes its two halves."""
        if self.rng_seed is None:
            launch = self.session.current_launch
            variable = f"_rng_seed_{self.session.top_loop_index}"
            launch["prologue"].append(f"{variable} = _rng_seed()")
            launch["helpers"].add("_rng_seed")
            high = self.builder.param(f"{variable}[0]", "rng_seed_high")
            low = self.builder.param(f"{variable}[1]", "rng_seed_low")
            self.rng_seed = self.builder.fresh("rng_seed")
            self.setup_lines.append(f"    {self.rng_seed} = (tl.cast({high}, tl.int32) * 65536 + tl.cast({low}, tl.int32)).to(tl.int64)")
        return self.rng_seed

    def random_site(self, node: ast.AST) -> int:
        """The number of a random call site of the kernel (its key's high word). An inlined
        function's body is a copy per call (inline.py), so each call of it is a site of its own; a
        body compiled twice (a peeled loop's two parts) keeps its sites' numbers."""
        return self.rng_sites.setdefault(node, len(self.rng_sites))

    def random_value(self, kind: str, seed: str, shape: tuple) -> TVal:
        """Philox values (`kind`: rand, randn or randint) of `shape` at its elements' offsets."""
        offsets = self.random_offsets(shape)
        dtype = torch.int32 if kind == "randint" else torch.float32
        return self.make(dtype, shape, lambda a: f"tl.{kind}({seed}, {offsets})", [], "rand")

    def random_to_dtype(self, kind: str, value: TVal, dtype: torch.dtype) -> TVal:
        """float32 random values as `dtype`: uniform ones on a grid of the dtype's precision first,
        so that rounding never yields 1.0 (as torch's generators avoid it)."""
        if dtype == torch.float32:
            return value
        if kind == "rand" and dtype in UNIFORM_BITS:
            scale = float(2 ** UNIFORM_BITS[dtype])
            value = self.make(torch.float32, value.shape, lambda a: f"(tl.floor({a[0]} * {scale}) * {1.0 / scale})", [value])
        return self.make(dtype, value.shape, lambda a: f"{a[0]}.to({tl_dtype(dtype)})", [value])

    def random_offsets(self, shape: tuple) -> str:
        """Triton text of the int64 offsets of a value of `shape` (see the module's docstring)."""
        rank = len(shape)
        loops = [(tile, end) for loop in self.open_loops for tile, end in loop]
        axes: list[tuple[str, str]] = []
        on_axes: set[int] = set()
        for axis, dim in enumerate(shape):
            if dim is ONE:
                continue
            loop = next(((tile, end) for tile, end in loops if isinstance(tile, TileVal) and tile.dim is dim), None)
            if loop is not None:
                index, extent = dim.index, self.loop_extent(loop[1])
                on_axes.add(id(loop[0]))
            elif isinstance(dim, RDim):
                index, extent = dim.index, dim.size_param
            else:  # a block of no open loop (a registered block size as a size): its positions
                index, extent = f"tl.arange(0, {dim.size_expr})", dim.size_expr
            axes.append((place(index, [axis], rank), extent))
        digits = [(tile.offset if isinstance(tile, TileVal) else self.atom(tile), self.loop_extent(end))
                  for tile, end in loops if id(tile) not in on_axes] + axes
        if not digits:
            return "0"
        text = f"{digits[0][0]}.to(tl.int64)"
        for index, extent in digits[1:]:
            text = f"({text}) * {extent} + {index}.to(tl.int64)"
        if rank and not axes:  # every axis is of size 1: the scalar offset as a block of the shape
            text = f"tl.full([{', '.join('1' for _ in shape)}], 0, tl.int64) + {text}"
        return text

    def loop_extent(self, end: Any) -> str:
        """The radix of an open loop's digit: its end when a host value, else any int32 index's bound."""
        if isinstance(end, (int, HostScalar)) and not isinstance(end, bool):
            return self.atom(end)
        return UNKNOWN_EXTENT
