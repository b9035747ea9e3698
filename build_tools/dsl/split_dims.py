"""Views that split one dim of a device value into adjacent dims, the inverse of reshape.py's merges
(a [2 * tile] value viewed as [tile, 2], a tile as [tile / 2, 2], a whole dim of 8 as [4, 2]); sizes
that name a part of a tile's block (`tile.block_size // 2`, `block_n // 2` of a registered block
size); and Helion's `hl.join` / `hl.split` (Triton's tl.join / tl.split) over a last dim of two."""
from __future__ import annotations

import ast
from fractions import Fraction
from typing import Any

import torch

from . import exc
from .reshape import power_of_two
from .values import ONE, BlockSizeInt, DimSize, JaggedDim, MergedDim, PartDim, RDim, TVal, extent_key, fixed_dim


def power_of_two_factor(factor: Any) -> bool:
    """A factor of an extent that is a power of two or one over a power of two."""
    factor = Fraction(factor)
    return power_of_two(factor.numerator) and power_of_two(factor.denominator)


class SplitMixin:
    def split_dim(self, whole: Any, targets: list, value: TVal) -> list:
        """The dims of `whole` viewed as the adjacent `targets`, whose extents multiply to its own
        (row-major: the last target varies fastest)."""
        if isinstance(whole, MergedDim):
            pairs = self.match_dims(list(whole.parts), targets, value)
            if sum(len(sources) for sources, _ in pairs) != len(whole.parts):
                raise self.mismatch(value, targets)
            return self.viewed_dims(pairs, value)
        if isinstance(whole, JaggedDim):
            raise self.error(exc.NotSupported, "splitting a jagged tile's dim (its lanes' ends would be lost)")
        shown = f"{self.dim_text(whole)} split into {self.shape_text(tuple(targets))}"
        keys = [extent_key(t) for t in targets]
        if isinstance(whole, RDim) and (extent_key(whole) is None or not power_of_two(whole.size_value)):
            return self.split_padded(whole, targets, shown)
        if not all(power_of_two_factor(key[1]) for key in keys):
            raise self.error(exc.ShapeMismatch, f"{shown}: each part must be a power of two, or a tile's block size "
                             "times or over one")
        ids, factor = extent_key(whole)
        if not ids:
            return [fixed_dim(int(key[1])) for key in keys]
        return self.split_block(whole, keys, shown)

    def split_padded(self, whole: RDim, targets: list, shown: str) -> list:
        """A whole dim of a size the compile does not know to be a power of two (a run-time size, or
        a constant one that is not; its block is padded past the size) split into a first part and
        constant power-of-two parts after it (rows of n as [n // 2, 2]): the block [P] viewed as
        [P / c, c, ...] (c the later parts' product) keeps each element at its place, and an
        element lies within the size where its first index lies within the first part's, so the
        first part is the whole dim of that size, with its own padded block and mask. A run-time
        size's equality to the parts' product joins the specialization."""
        first, rest = targets[0], [self.fixed_extent(t) for t in targets[1:]]
        if not all(extent is not None and power_of_two(extent) for extent in rest):
            raise self.error(exc.ShapeMismatch, f"{shown}: a whole dim whose size is not a power of two (its block is "
                             "padded past the size) splits into a first part and power-of-two parts after it")
        factor = 1
        for dim in targets[1:]:
            factor *= self.pin_extent(dim)
        if not isinstance(first, RDim):
            key = extent_key(first)
            if key is None or key[0]:
                raise self.error(exc.ShapeMismatch, f"{shown}: the first part of a whole dim must be a whole size")
            first = self.rdim_for(int(key[1]), str(int(key[1])), str(int(key[1])))
        self.require_whole([whole, first], "splitting a whole dim")
        whole_host, whole_static = self.session.rdim_host[id(whole)]
        first_host, first_static = self.session.rdim_host[id(first)]
        if not (whole_static and first_static):
            self.guard_equal(whole_host, f"({first_host}) * {factor}")
        return [first] + [fixed_dim(extent) for extent in rest]

    def split_block(self, whole: Any, keys: list, shown: str) -> list:
        """The parts of a dim made of one tunable block: the part that keeps the block (its size
        over the other parts' product, which the block must reach: the config space's lowest
        block becomes at least that) and the constant parts. Where `whole` is masked, every part
        carries the mask over all of them (values.PartDim)."""
        (block_id,), factor = extent_key(whole)
        constant = 1
        for ids, part in keys:
            constant *= 1 if ids else part
        needed = max(1, int(constant / Fraction(factor)))
        info = self.session.found.blocks[block_id]
        info.low = max(info.low, needed)
        if self.dim_value(whole) < constant:
            raise self.error(exc.ShapeMismatch, f"{shown}: the tile's block of {self.dim_value(whole)} is below "
                             f"{constant}; use a block of at least {needed}")
        sizes = [f"({whole.size_expr} // {constant})" if ids else str(part) for ids, part in keys]
        values = [self.dim_value(whole) // constant if ids else int(part) for ids, part in keys]
        if whole.mask is None:
            return [PartDim(key, size, f"tl.arange(0, {size})", v) if key[0] else fixed_dim(v)
                    for key, size, v in zip(keys, sizes, values)]
        joint = self.builder.assign(f"tl.reshape({whole.mask}, [{', '.join(sizes)}])", "mask")
        pieces = [PartDim(key, size, f"tl.arange(0, {size})", v, self.projected_mask(joint, axis, len(keys)), joint)
                  for axis, (key, size, v) in enumerate(zip(keys, sizes, values))]
        for piece in pieces:
            piece.pieces = tuple(pieces)
            piece.whole = whole
        return pieces

    def projected_mask(self, joint: str, axis: int, rank: int) -> str:
        """Where some element along the other axes of the rank-`rank` mask `joint` holds, along `axis`."""
        expr = f"{joint}.to(tl.int32)"
        for other in reversed(range(rank)):
            if other != axis:
                expr = f"tl.max({expr}, {other})"
        return self.builder.assign(f"{expr} != 0", "mask")

    def divided_size(self, size: DimSize, divisor: Any) -> DimSize | None:
        """`size // divisor` of a size naming a dim made of a tile's block: a size (and a number)
        naming that part of the block; None for other sizes (a plain number)."""
        if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1 or size.dim is None:
            return None
        key = extent_key(size.dim)
        if key is None or not key[0]:
            return None
        if divisor == 1:
            return size
        expr = f"({size.dim.size_expr} // {divisor})"
        dim = PartDim((key[0], Fraction(key[1]) / divisor), expr, f"tl.arange(0, {expr})", self.dim_value(size.dim) // divisor)
        return DimSize(expr, dim.size_value, size.dtype, dim=dim)

    def block_size_arithmetic(self, op: ast.operator, left: Any, right: Any) -> DimSize | None:
        """`block // k` and `block * k` (or `k * block`) of a registered block size (a host value in
        device code) as a size naming part of its tiles' dim or that dim merged with `k`; None for
        other operands."""
        if isinstance(op, ast.Mult) and isinstance(right, BlockSizeInt) and not isinstance(left, BlockSizeInt):
            left, right = right, left
        if not isinstance(left, BlockSizeInt) or not isinstance(op, (ast.FloorDiv, ast.Mult)):
            return None
        (dim,) = self.shape_from_sizes([left])
        size = DimSize(dim.size_expr, int(left), torch.int32, dim=dim)
        return self.divided_size(size, right) if isinstance(op, ast.FloorDiv) else self.scaled_size(size, right)

    def hl_join(self, first: Any, second: Any) -> TVal:
        """hl.join(a, b): two values of one dtype, broadcast to one shape, along a new last dim of two."""
        first, second = self.to_tval(first), self.to_tval(second)
        if first.dtype != second.dtype:
            raise self.error(exc.TypeMismatch, f"hl.join of {first.dtype} and {second.dtype} values: both must have one dtype")
        return self.stack([first, second], -1)

    def hl_split(self, value: Any) -> tuple:
        """hl.split(x): the two halves of `x` along its last dim, which has size 2, without that dim."""
        value = self.to_tval(value)
        last = value.shape[-1] if value.shape else ONE
        self.require_whole([last], "hl.split")
        if last is ONE or extent_key(last) != ((), 2):
            raise self.error(exc.ShapeMismatch, f"hl.split of a value of shape {self.shape_text(value.shape)}: its last "
                             "dim must have size 2")
        shape = value.shape[:-1]
        return tuple(self.make(value.dtype, shape, lambda a, i=i: f"tl.split({a[0]})[{i}]", [value]) for i in (0, 1))
