"""Functions of device code that reorder a dim: `sort`, `argsort`, `msort`, `topk`, `flip`
(`fliplr`, `flipud`), `roll`, `gather` and `take_along_dim`, and the order statistics `median`, `nanmedian` and `kthvalue`,
with PyTorch's semantics over the valid lanes of a block.

Triton's `tl.sort`, `tl.topk` and `tl.flip` work on a whole power-of-two block and return values
only, so a block's padding (the lanes past a tile's end or a whole dim's size) would move into the
valid lanes. Here each lane gets one int64 rank that orders it: its value's order-preserving
integer (floats by their bits, NaN above +inf and -0.0 equal to 0.0, as PyTorch orders them) in the
high bits, its position in the low bits so that equal values keep their order (a stable sort), and
below every value for the padding. The ranks are sorted descending, the positions read back from
them, and the values gathered from the input at those positions (so they are the input's own,
-0.0 and NaN payloads included). A flip gathers from `valid - 1 - position` and a roll from
`(position - shift) mod valid`, `valid` counted from the dim's mask."""
from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from . import exc
from .reduce import ValuesIndices
from .values import ONE, RDim, TVal, extent_key, place, same_dim

# Ranks: the 32-bit order key shifted above a 31-bit position; padding ranks below every key
POSITION_BITS = 31
PADDING_KEY = -(2**31) - 1
ORDERED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
                  torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


class OrderingMixin:
    def ordering_functions(self) -> dict[Any, Callable[..., Any]]:
        """Handlers of the module docstring's functions, by the torch callable."""
        return {
            torch.sort: self.sort,
            torch.argsort: lambda v, dim=-1, descending=False, stable=False: self.sort(v, dim, descending).indices,
            torch.msort: lambda v: self.sort(v, 0).values,
            torch.topk: self.topk,
            torch.flip: self.flip,
            torch.fliplr: lambda v: self.flip(v, [1]),
            torch.flipud: lambda v: self.flip(v, [0]),
            torch.roll: self.roll,
            torch.median: lambda v, dim=None, keepdim=False: self.order_statistic("median", v, dim, keepdim),
            torch.nanmedian: lambda v, dim=None, keepdim=False: self.order_statistic("nanmedian", v, dim, keepdim),
            torch.kthvalue: lambda v, k, dim=-1, keepdim=False: self.order_statistic("kthvalue", v, dim, keepdim, k),
            torch.gather: self.gather,
            torch.take_along_dim: self.take_along_dim,
        }

    def ordering_methods(self, base: TVal) -> dict[str, Callable[..., Any]]:
        """The tensor methods of the same functions, on `base`."""
        functions = self.ordering_functions()
        methods = {name: (lambda *a, _f=functions[getattr(torch, name)], **k: _f(base, *a, **k))
                   for name in ("sort", "argsort", "msort", "topk", "fliplr", "flipud", "roll", "median", "nanmedian",
                                "kthvalue", "gather", "take_along_dim")}
        methods["flip"] = lambda *dims: self.flip(base, dims[0] if len(dims) == 1 else dims)
        return methods

    # ------------------------------------------------------------------ sort and topk
    def sort(self, value: Any, dim: int = -1, descending: bool = False, *, stable: bool = False) -> ValuesIndices:
        """torch.sort along `dim`: (values, int64 positions), stable whatever `stable` says."""
        value = self.to_tval(value)
        axis = self.ordered_axis(value, dim, "torch.sort")
        if value.shape[axis] is ONE:
            return ValuesIndices((value, self.full(value.shape, 0, torch.int64)))
        return self.ordered(value, axis, descending=bool(descending), keep=None)

    def topk(self, value: Any, k: Any, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:
        """torch.topk along `dim`: the `k` largest (or smallest) values and their int64 positions,
        largest (smallest) first also where `sorted` is False, equal values in position order. The
        result's dim is a whole dim of size `k`, which must be a compile-time constant."""
        value = self.to_tval(value)
        axis = self.ordered_axis(value, dim, "torch.topk")
        count = self.counted_along(value, axis, k, dim, "topk")
        out_dim = self.rdim_for(count, str(count), str(count)) if count > 1 else ONE
        self.require_whole([out_dim], "torch.topk's result")
        if value.shape[axis] is ONE:
            return ValuesIndices((value, self.full(value.shape, 0, torch.int64)))
        return self.ordered(value, axis, descending=bool(largest), keep=out_dim)

    def order_statistic(self, what: str, value: Any, dim: Any, keepdim: bool, k: Any = None) -> ValuesIndices:
        """torch.median / nanmedian (the lower median) and kthvalue (the k-th smallest, k from 1)
        along `dim`, with its position: a lane of the ascending sort. NaN sorts last, so a median of
        values holding NaN is the first NaN (PyTorch's); a nanmedian leaves them out (NaN where all
        are)."""
        if dim is None:
            raise self.error(exc.NotSupported, f"torch.{what} over all dims in device code; give a dim")
        value = self.to_tval(value)
        axis = self.ordered_axis(value, dim, f"torch.{what}")
        if value.shape[axis] is ONE:
            ordered = ValuesIndices((value, self.full(value.shape, 0, torch.int64)))
            position: Any = self.full(value.shape, 0, torch.int32)
        else:
            ordered = self.ordered(value, axis, descending=False, keep=None)
            valid = self.valid_count(value, axis)
            if what == "kthvalue":
                count = self.counted_along(value, axis, k, dim, what)
                position = self.full(valid.shape, count - 1, torch.int32)
            elif not value.dtype.is_floating_point:
                position = self.binary(ast.FloorDiv(), self.binary(ast.Sub(), valid, 1), 2)
            else:
                nans = self.reduce("sum", self.to_dtype(self.isnan(value), torch.int32), axis, keepdim=True)
                numbers = self.binary(ast.Sub(), valid, nans)
                if what == "median":
                    middle = self.binary(ast.FloorDiv(), self.binary(ast.Sub(), valid, 1), 2)
                    position = self.where(self.binary(ast.Gt(), nans, 0), numbers, middle)
                else:
                    position = self.extremum("maximum", self.binary(ast.FloorDiv(), self.binary(ast.Sub(), numbers, 1), 2), 0)
        position = self.to_dtype(position, torch.int32)
        values, indices = (self.lane_gather(part, position, axis, "statistic") for part in ordered)
        if not keepdim:
            values, indices = self.squeeze(values, axis), self.squeeze(indices, axis)
        return ValuesIndices((values, indices))

    def ordered_axis(self, value: TVal, dim: Any, what: str) -> int:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise self.error(exc.NotSupported, f"{what} along dim {dim!r}; give one int dim")
        if not value.shape:
            raise self.error(exc.ShapeMismatch, f"{what} of a scalar")
        if value.dtype not in ORDERED_DTYPES:
            raise self.error(exc.NotSupported, f"{what} of {value.dtype} values: device code orders floats of at most "
                             "32 bits and integers of at most 32 bits (a value and its position share one int64)")
        axis = dim % len(value.shape)
        self.require_whole([value.shape[axis]], what)
        return axis

    def counted_along(self, value: TVal, axis: int, k: Any, dim: Any, what: str) -> int:
        """`k` of torch.`what` as an int, checked against the whole dim at `axis`: the compiled code
        assumes k elements there, so a run-time size's bound joins the specialization."""
        count = self.compile_time_count(k, what)
        size = self.whole_extent(value.shape[axis], what)
        if count > size:
            raise self.error(exc.ShapeMismatch, f"torch.{what}: k={count} is more than the {size} elements along dim {dim}")
        if isinstance(value.shape[axis], RDim) and not value.shape[axis].size_param.isdigit():
            host = self.session.rdim_host[id(value.shape[axis])][0]
            self.session.bake(f"({host}) >= {count}", True, guard=True)
        return count

    def compile_time_count(self, k: Any, what: str) -> int:
        """`k` as an int of at least 1 (compile_time_int)."""
        count = self.compile_time_int(k, f"torch.{what}'s k")
        if count < 1:
            raise self.error(exc.ShapeMismatch, f"torch.{what}: k={count}; device code takes k >= 1")
        return count

    def whole_extent(self, dim: Any, what: str) -> int:
        """The number of elements along a whole dim (a `:` or a constant-size dim): for a run-time
        size the bind-time one."""
        if dim is ONE:
            return 1
        if isinstance(dim, RDim):
            return dim.size_value
        key = extent_key(dim)
        if key is not None and not key[0] and dim.mask is None:
            return int(key[1])
        raise self.error(exc.NotSupported, f"torch.{what} along a tile's dim (its number of valid elements varies); "
                         "take the whole dim with `:`")

    def ordered(self, value: TVal, axis: int, *, descending: bool, keep: Any) -> ValuesIndices:
        """The values of `value` along `axis` in descending (else ascending) order with their
        positions: all of them, or where `keep` is a dim, its extent's first (a top-k)."""
        last = len(value.shape) - 1
        order = list(range(len(value.shape)))
        order[axis], order[last] = last, axis
        moved = self.permute(value, order) if axis != last else value
        block = moved.shape[last].size_expr
        rank = self.order_rank(moved, descending)
        if keep is None:
            chosen = self.make(torch.int64, rank.shape, lambda a: f"tl.sort({a[0]}, {last}, descending=True)", [rank], "sorted")
        else:
            chosen = self.make(torch.int64, rank.shape[:last] + (keep,),
                               lambda a: f"tl.topk({a[0]}, {keep.size_expr}, {last})", [rank], "topk")
        mask = (1 << POSITION_BITS) - 1
        positions = self.make(torch.int32, chosen.shape, lambda a: f"({block} - 1 - ({a[0]} & {mask})).to(tl.int32)",
                              [chosen], "position")
        values = self.lane_gather(moved, positions, last, "ordered")
        indices = self.to_dtype(positions, torch.int64)
        if axis != last:
            values, indices = self.permute(values, order), self.permute(indices, order)
        return ValuesIndices((values, indices))

    def order_rank(self, value: TVal, descending: bool) -> TVal:
        """Each lane's int64 rank along the last axis (module docstring): larger ranks come first."""
        last = len(value.shape) - 1
        dim = value.shape[last]
        key = self.order_key(value)
        lanes = place(f"tl.arange(0, {dim.size_expr})", [last], len(value.shape))
        mask = self.mask_for(value.shape, last)

        def render(a: list[str]) -> str:
            high = (a[0] if descending else f"~{a[0]}") + ".to(tl.int64)"
            if mask:
                high = f"tl.where({mask}, {high}, {PADDING_KEY})"
            return f"({high} << {POSITION_BITS}) | ({dim.size_expr} - 1 - {lanes}).to(tl.int64)"

        return self.make(torch.int64, value.shape, render, [key], "rank")

    def order_key(self, value: TVal) -> TVal:
        """An int32 that orders as PyTorch orders the values: integers as themselves, floats by
        their bits (negative ones reversed), after NaN is made one positive NaN and -0.0 is 0.0."""
        if not value.dtype.is_floating_point:
            return self.to_dtype(value, torch.int32)
        x = self.to_dtype(value, torch.float32)
        bits = self.make(torch.int32, x.shape, lambda a: f"tl.where({a[0]} != {a[0]}, float('nan'), {a[0]} + 0.0)"
                         ".to(tl.int32, bitcast=True)", [x], "bits")
        return self.make(torch.int32, x.shape, lambda a: f"tl.where({a[0]} < 0, {a[0]} ^ 0x7FFFFFFF, {a[0]})", [bits], "key")

    # ------------------------------------------------------------------ flip and roll
    def flip(self, value: Any, dims: Any) -> TVal:
        """torch.flip over `dims`: position i takes lane `valid - 1 - i`, `valid` the number of
        lanes the dim's mask holds (lanes past them keep theirs). Not tl.flip, which moves the
        padding and fails on a one-lane block."""
        value = self.to_tval(value)
        for axis in self.moved_axes(value, [dims] if isinstance(dims, int) else dims, "torch.flip"):
            value = self.gathered_along(value, axis, lambda lane, valid: f"{valid} - 1 - {lane}", "flipped")
        return value

    def roll(self, value: Any, shifts: Any, dims: Any = None) -> TVal:
        """torch.roll along `dims`: position i takes lane (i - shift) mod valid."""
        value = self.to_tval(value)
        if dims is None:
            raise self.error(exc.NotSupported, "torch.roll without dims in device code (a roll of the flattened value); give dims")
        shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
        dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
        if len(shifts) != len(dims):
            raise self.error(exc.ShapeMismatch, f"torch.roll: {len(shifts)} shifts for {len(dims)} dims")
        for shift, dim in zip(shifts, dims):
            amount = self.atom(shift)
            for axis in self.moved_axes(value, [dim], "torch.roll"):
                value = self.gathered_along(value, axis, lambda lane, valid: f"(({lane} - {amount}) % {valid} + {valid}) % {valid}",
                                            "rolled")
        return value

    def gather(self, value: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> TVal:
        """torch.gather along `dim`: out[..., i, ...] = value[..., index[..., i, ...], ...], of
        index's shape. Its other dims must be value's own (a block's dims are not cut), and value's
        `dim` whole. A position outside [0, size) gives an undefined element (PyTorch raises);
        positions are taken modulo the dim's power-of-two block, so none reads past it."""
        value, index = self.to_tval(value), self.to_tval(index)
        if index.dtype.is_floating_point or index.dtype == torch.bool:
            raise self.error(exc.TypeMismatch, f"torch.gather with {index.dtype} positions; they must be integers")
        axis = dim % self.same_rank(value, index, "torch.gather")
        if not all(same_dim(a, b) for d, (a, b) in enumerate(zip(value.shape, index.shape)) if d != axis):
            raise self.error(exc.ShapeMismatch, f"torch.gather of {self.shape_text(value.shape)} at positions "
                             f"{self.shape_text(index.shape)}: the dims other than {dim} must be the same")
        self.require_whole([value.shape[axis], index.shape[axis]], "torch.gather")
        if value.shape[axis] is ONE:
            return self.broadcast_to(value, index.shape)
        for extent in (value.shape[axis], index.shape[axis]):
            if isinstance(extent, RDim) and not extent.size_param.isdigit():
                self.pin_extent(extent)  # the two blocks' ratio is compiled in (lane_gather)
        block = value.shape[axis].size_expr
        lanes = self.make(torch.int32, index.shape, lambda a: f"({a[0]}.to(tl.int32) & ({block} - 1))", [index], "lanes")
        return self.lane_gather(value, lanes, axis, "gathered")

    def take_along_dim(self, value: Any, indices: Any, dim: Any = None) -> TVal:
        """torch.take_along_dim: torch.gather after broadcasting `value` and `indices` over the
        dims other than `dim` (a dim must be given: device code does not flatten)."""
        if dim is None:
            raise self.error(exc.NotSupported, "torch.take_along_dim without a dim in device code (it flattens the value); give a dim")
        value, indices = self.to_tval(value), self.to_tval(indices)
        axis = dim % self.same_rank(value, indices, "torch.take_along_dim")
        others = self.broadcast_shape(value.shape[:axis] + (ONE,) + value.shape[axis + 1:],
                                      indices.shape[:axis] + (ONE,) + indices.shape[axis + 1:])
        value = self.broadcast_to(value, others[:axis] + (value.shape[axis],) + others[axis + 1:])
        indices = self.broadcast_to(indices, others[:axis] + (indices.shape[axis],) + others[axis + 1:])
        return self.gather(value, axis, indices)

    def same_rank(self, value: TVal, positions: TVal, what: str) -> int:
        """The rank of `value` and of its `positions`, which must have the same one, at least 1."""
        rank = len(value.shape)
        if len(positions.shape) != rank or not rank:
            raise self.error(exc.ShapeMismatch, f"{what} of {self.shape_text(value.shape)} at positions "
                             f"{self.shape_text(positions.shape)}: they must have the same number of dims, at least one")
        return rank

    def moved_axes(self, value: TVal, dims: Any, what: str) -> list[int]:
        """The axes of `dims` that hold more than one lane, each needed whole."""
        if not value.shape:
            return []
        axes = sorted({d % len(value.shape) for d in dims})
        self.require_whole([value.shape[a] for a in axes], what)
        return [a for a in axes if value.shape[a] is not ONE]

    def gathered_along(self, value: TVal, axis: int, source: Callable[[str, str], str], prefix: str) -> TVal:
        """`value` with position i along `axis` taken from lane `source(i, valid)` for the valid
        positions (`valid` counted from the dim's mask); lanes past them keep theirs."""
        lanes = place(f"tl.arange(0, {value.shape[axis].size_expr})", [axis], len(value.shape))
        valid = self.valid_count(value, axis)
        sources = self.make(torch.int32, value.shape, lambda a: f"tl.where({lanes} < {a[0]}, {source(lanes, a[0])}, {lanes})",
                            [valid], "source")
        return self.lane_gather(value, sources, axis, prefix)

    def valid_count(self, value: TVal, axis: int) -> TVal:
        """The number of valid lanes along `axis` (the lanes its mask holds), int32 of `value`'s
        shape with a unit dim at `axis`."""
        dim = value.shape[axis]
        mask = self.mask_for(value.shape, axis)
        counted = value.shape[:axis] + (ONE,) + value.shape[axis + 1:]
        sizes = ", ".join(d.size_expr for d in counted)
        count = (f"tl.broadcast_to(tl.sum(({mask}).to(tl.int32), {axis}, keep_dims=True), [{sizes}])" if mask
                 else f"tl.full([{sizes}], {dim.size_expr}, tl.int32)")
        return self.make(torch.int32, counted, lambda a: count, [], "valid")

    def lane_gather(self, value: TVal, lanes: TVal, axis: int, prefix: str) -> TVal:
        """`value`'s lanes along `axis` at the int32 positions `lanes` (tl.gather; bool values go
        as int8). Where the positions' block is longer than the value's (a whole multiple: both
        are powers of two), they gather in chunks of the value's block from the value repeated
        along a new dim: Triton 3.6's GPU compiler asserts on a gather longer than its source
        (OptimizeThreadLocality, `isWarpLocal`; H100, 2026-12-07)."""
        carried = self.to_dtype(value, torch.int8) if value.dtype == torch.bool else value
        ratio = self.lane_block(lanes.shape[axis]) // self.lane_block(value.shape[axis])
        if ratio <= 1:
            render = lambda a: f"tl.gather({a[0]}, {a[1]}, {axis})"  # noqa: E731
        else:
            sizes = [d.size_expr for d in lanes.shape]
            chunks = sizes[:axis] + [str(ratio), value.shape[axis].size_expr] + sizes[axis + 1:]
            repeated = [d.size_expr for d in value.shape]
            repeated.insert(axis, str(ratio))
            render = lambda a: (f"tl.reshape(tl.gather(tl.broadcast_to(tl.expand_dims({a[0]}, {axis}), [{', '.join(repeated)}]), "  # noqa: E731
                                f"tl.reshape({a[1]}, [{', '.join(chunks)}]), {axis + 1}), [{', '.join(sizes)}])")
        out = self.make(carried.dtype, lanes.shape, render, [carried, lanes], prefix)
        return self.to_dtype(out, torch.bool) if value.dtype == torch.bool else out

    def lane_block(self, dim: Any) -> int:
        """The number of lanes of a dim's block at compile time (a whole dim's padded size)."""
        if isinstance(dim, RDim):
            return max(1, 1 << (max(dim.size_value, 1) - 1).bit_length())
        return self.dim_value(dim)
