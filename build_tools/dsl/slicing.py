"""Parts and repeats of a device value along a whole dim, for the device compiler: `value[:, a:b:s]`
and `value[:, i]` with compile-time bounds, `torch.narrow`, `select`, `chunk`, `split`, `unbind`,
`F.glu`, `torch.repeat_interleave`, `Tensor.repeat` and `torch.tile` (function and method forms);
the diagonals of two dims: `torch.diagonal`, `torch.diag` and `torch.trace`.

A block holds a power-of-two extent per dim, so a part is a new whole dim of the part's length
whose lane j holds the value's lane start + j * step, gathered along the dim (tl.gather through
lane_gather); a part of one lane is a unit dim, and an integer index drops it. Repeats gather
lane j // repeats (repeat_interleave) or j % extent (repeat, tile) into the whole dim of the
product. A diagonal gathers lane i + offset of its second dim into a unit dim, then takes the part
of the first dim where both lanes exist. The dim must be a whole dim of a constant size (a
run-time size joins the specialization): a tile's dim has a varying number of valid lanes."""
from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from . import exc
from .values import ONE, RDim, TVal, place


class SlicingMixin:
    def slicing_functions(self) -> dict[Any, Callable[..., Any]]:
        """Handlers of the module docstring's functions, by the torch callable."""
        return {
            torch.narrow: self.narrow,
            torch.select: self.select,
            torch.chunk: self.chunk,
            torch.split: self.split_parts,
            torch.unbind: self.unbind,
            torch.nn.functional.glu: self.glu,
            torch.repeat_interleave: self.repeat_interleave,
            torch.tile: self.tile_copies,
            torch.diagonal: self.diagonal,
            torch.diag: self.diag,
            torch.trace: self.trace,
        }

    def slicing_methods(self, base: TVal) -> dict[str, Callable[..., Any]]:
        """The tensor methods of the same functions, on `base`."""
        functions = self.slicing_functions()
        methods = {name: (lambda *a, _f=functions[getattr(torch, name)], **k: _f(base, *a, **k))
                   for name in ("narrow", "select", "chunk", "split", "unbind", "repeat_interleave", "tile",
                                "diagonal", "diag", "trace")}
        methods["repeat"] = lambda *sizes: self.repeat(base, *sizes)
        return methods

    def subscript_parts(self, value: TVal, items: list) -> tuple[TVal, list, list]:
        """`value` with the slices and integers among a subscript's AST `items` taken along their
        dims (an integer as a one-lane part), the entries left for `subscripted` (':' in their
        place) and the result axes that the integers drop."""
        entries, parts, dropped, source, result = [], [], [], 0, 0
        for at, item in enumerate(items):
            if isinstance(item, ast.Constant) and item.value is None:
                entries.append(None)
                result += 1
            elif isinstance(item, ast.Constant) and item.value is Ellipsis:
                later = sum(1 for i in items[at + 1:] if not (isinstance(i, ast.Constant) and i.value is None))
                kept = len(value.shape) - source - later
                entries.append(Ellipsis)
                source, result = source + kept, result + kept
            else:
                entries.append(slice(None))
                if not isinstance(item, ast.Slice):
                    parts.append((source, self.expr(item), None))
                    dropped.append(result)
                elif any(b is not None for b in (item.lower, item.upper, item.step)):
                    parts.append((source, None, [None if b is None else self.expr(b) for b in (item.lower, item.upper, item.step)]))
                source, result = source + 1, result + 1
        for axis, index, bounds in parts:
            if axis >= len(value.shape):
                raise self.error(exc.ShapeMismatch, f"{len(items)} index entries for a value of shape {self.shape_text(value.shape)}")
            if bounds is None:
                index = self.lane_index(value, axis, index, "indexing a device value")
                bounds = [index, index + 1, 1]
            value = self.part(value, axis, *bounds, "slicing a device value")
        return value, entries, dropped

    def part(self, value: Any, dim: int, start: Any, stop: Any, step: Any, what: str) -> TVal:
        """`value`'s lanes start, start + step, ... below stop along `dim` (Python's slice rules
        with the dim's extent; bounds compile-time ints), a new whole dim of their count (one lane:
        a unit dim)."""
        value = self.to_tval(value)
        axis = self.axis_of(value, dim, what)
        extent = self.constant_extent(value.shape[axis], what)
        bounds = [None if b is None else self.compile_time_int(b, what) for b in (start, stop, step)]
        if bounds[2] is not None and bounds[2] <= 0:
            raise self.error(exc.ShapeMismatch, f"{what}: step {bounds[2]}; it must be positive")
        lanes = range(*slice(*bounds).indices(extent))
        if not lanes:
            raise self.error(exc.ShapeMismatch, f"{what}: no lanes of a dim of {extent} (device values have no empty dims)")
        if len(lanes) == extent:
            return value
        return self.relaned(value, axis, len(lanes), lambda j: f"{lanes.start} + {j} * {lanes.step}", what)

    def relaned(self, value: TVal, axis: int, length: int, source: Callable[[str], str], what: str) -> TVal:
        """`value` along `axis` as a new whole dim of `length` lanes (one lane: a unit dim), lane j
        the value's lane `source(j)` (a Triton expression of the positions; it may read other dims'
        positions, as a diagonal does), clamped into its block (lanes the caller does not keep may
        point outside it); a unit dim is broadcast."""
        dim_out = ONE if length == 1 else self.rdim_for(length, str(length), str(length))
        self.require_whole([dim_out], what)
        shape = value.shape[:axis] + (dim_out,) + value.shape[axis + 1:]
        if value.shape[axis] is ONE:
            return self.broadcast_to(value, shape)
        sizes = ", ".join(d.size_expr for d in shape)
        position = place(f"tl.arange(0, {dim_out.size_expr})", [axis], len(shape))
        last = f"{value.shape[axis].size_expr} - 1"
        sources = self.make(torch.int32, shape, lambda a: f"tl.broadcast_to(tl.minimum(tl.maximum({source(position)}, 0), {last}), "
                            f"[{sizes}])", [], "source")
        return self.lane_gather(value, sources, axis, "relaned")

    def repeat_interleave(self, value: Any, repeats: Any, dim: Any = None, *, output_size: Any = None) -> TVal:
        """torch.repeat_interleave with a compile-time count: lane j of the result is lane
        j // repeats. Without a dim only a one-dim value (PyTorch flattens)."""
        value = self.to_tval(value)
        if dim is None and len(value.shape) != 1:
            raise self.error(exc.NotSupported, "torch.repeat_interleave without a dim of a value of more than one dim "
                             "(it flattens the value); give a dim")
        if isinstance(repeats, TVal):
            raise self.error(exc.NotSupported, "torch.repeat_interleave with a tensor of counts in device code; "
                             "give one compile-time count")
        axis = self.axis_of(value, 0 if dim is None else dim, "torch.repeat_interleave")
        repeats = self.compile_time_int(repeats, "torch.repeat_interleave")
        extent = self.constant_extent(value.shape[axis], "torch.repeat_interleave")
        if repeats < 1:
            raise self.error(exc.ShapeMismatch, f"torch.repeat_interleave: {repeats} repeats (device values have no empty dims)")
        if repeats == 1:
            return value
        return self.relaned(value, axis, extent * repeats, lambda j: f"{j} // {repeats}", "torch.repeat_interleave")

    def repeat(self, value: Any, *sizes: Any) -> TVal:
        """Tensor.repeat (and torch.tile, whose sizes may be fewer than the dims): the value
        repeated `sizes[d]` times along each dim (lane j is lane j % extent); leading sizes past the
        value's dims add dims."""
        value = self.to_tval(value)
        counts = [self.compile_time_int(c, "Tensor.repeat") for c in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple))
                                                                     else sizes)]
        if len(counts) < len(value.shape):
            raise self.error(exc.ShapeMismatch, f"Tensor.repeat with {len(counts)} sizes for a value of {len(value.shape)} dims")
        if min(counts, default=1) < 1:
            raise self.error(exc.ShapeMismatch, f"Tensor.repeat by {counts} (device values have no empty dims)")
        for _ in range(len(counts) - len(value.shape)):
            value = self.unsqueeze(value, 0)
        for axis, count in enumerate(counts):
            if count > 1:
                extent = self.constant_extent(value.shape[axis], "Tensor.repeat")
                value = self.relaned(value, axis, extent * count, lambda j, n=extent: f"{j} % {n}", "Tensor.repeat")
        return value

    def tile_copies(self, value: Any, dims: Any) -> TVal:
        """torch.tile: Tensor.repeat with ones put before `dims` where they are fewer than the dims."""
        value = self.to_tval(value)
        dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
        return self.repeat(value, [1] * (len(value.shape) - len(dims)) + dims)

    def axis_of(self, value: TVal, dim: int, what: str) -> int:
        """`dim` of `value` as a non-negative axis; a zero-dim value has none."""
        if not value.shape:
            raise self.error(exc.ShapeMismatch, f"{what} of a zero-dim value")
        return dim % len(value.shape)

    def constant_extent(self, dim: Any, what: str) -> int:
        """The extent of a whole dim of a constant size (a run-time size joins the specialization)."""
        self.require_whole([dim], what)
        extent = 1 if dim is ONE else self.fixed_extent(dim)
        if extent is None:
            raise self.error(exc.NotSupported, f"{what} along a tile's dim (its number of valid lanes varies); "
                             "it takes whole dims of a constant size")
        if isinstance(dim, RDim):
            self.pin_extent(dim)
        return extent

    def narrow(self, value: Any, dim: int, start: Any, length: Any) -> TVal:
        """torch.narrow: `length` lanes from `start` (negative from the end) along `dim`."""
        value = self.to_tval(value)
        axis = self.axis_of(value, dim, "torch.narrow")
        start = self.lane_index(value, axis, start, "torch.narrow")
        length = self.compile_time_int(length, "torch.narrow")
        extent = self.constant_extent(value.shape[axis], "torch.narrow")
        if length < 1 or start + length > extent:
            raise self.error(exc.ShapeMismatch, f"torch.narrow: {length} lanes from {start} of a dim of {extent}")
        return self.part(value, axis, start, start + length, 1, "torch.narrow")

    def lane_index(self, value: TVal, axis: int, index: Any, what: str) -> int:
        """A compile-time `index` along `axis` (negative from the end), checked against its extent."""
        index = self.compile_time_int(index, what)
        extent = self.constant_extent(value.shape[axis], what)
        if not -extent <= index < extent:
            raise self.error(exc.ShapeMismatch, f"{what}: index {index} out of range for a dim of {extent}")
        return index % extent

    def select(self, value: Any, dim: int, index: Any) -> TVal:
        """torch.select: the lane `index` along `dim`, the dim dropped."""
        value = self.to_tval(value)
        axis = self.axis_of(value, dim, "torch.select")
        index = self.lane_index(value, axis, index, "torch.select")
        return self.squeeze(self.part(value, axis, index, index + 1, 1, "torch.select"), axis)

    def chunk(self, value: Any, chunks: int, dim: int = 0) -> tuple:
        """torch.chunk: parts of ceil(extent / chunks) lanes (fewer parts where they run out)."""
        value = self.to_tval(value)
        chunks = self.compile_time_int(chunks, "torch.chunk")
        if chunks < 1:
            raise self.error(exc.ShapeMismatch, f"torch.chunk into {chunks} chunks")
        extent = self.constant_extent(value.shape[self.axis_of(value, dim, "torch.chunk")], "torch.chunk")
        size = -(-extent // chunks)
        return self.split_parts(value, size, dim)

    def split_parts(self, value: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
        """torch.split: parts of `split_size_or_sections` lanes (the last one shorter), or of each
        listed size (which must add up to the extent)."""
        value = self.to_tval(value)
        extent = self.constant_extent(value.shape[self.axis_of(value, dim, "torch.split")], "torch.split")
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes = [self.compile_time_int(s, "torch.split") for s in split_size_or_sections]
            if sum(sizes) != extent or min(sizes) < 1:
                raise self.error(exc.ShapeMismatch, f"torch.split into {sizes} of a dim of {extent}")
        else:
            size = self.compile_time_int(split_size_or_sections, "torch.split")
            if size < 1:
                raise self.error(exc.ShapeMismatch, f"torch.split into parts of {size}")
            sizes = [min(size, extent - start) for start in range(0, extent, size)]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return tuple(self.part(value, dim, start, start + size, 1, "torch.split") for start, size in zip(starts, sizes))

    def unbind(self, value: Any, dim: int = 0) -> tuple:
        """torch.unbind: each lane along `dim`, the dim dropped."""
        value = self.to_tval(value)
        extent = self.constant_extent(value.shape[self.axis_of(value, dim, "torch.unbind")], "torch.unbind")
        return tuple(self.select(value, dim, i) for i in range(extent))

    def glu(self, value: Any, dim: int = -1) -> TVal:
        """F.glu: the first half of `dim` times the sigmoid of the second (an even extent)."""
        value = self.to_tval(value)
        extent = self.constant_extent(value.shape[self.axis_of(value, dim, "F.glu")], "F.glu")
        if extent % 2:
            raise self.error(exc.ShapeMismatch, f"F.glu halves a dim of {extent}; it must be even")
        first, second = self.split_parts(value, extent // 2, dim)
        return self.mul(first, self.math("sigmoid", second))

    def diagonal(self, value: Any, offset: Any = 0, dim1: int = 0, dim2: int = 1) -> TVal:
        """torch.diagonal: the lanes (i, i + offset) of dims `dim1` and `dim2`, which are dropped,
        as a new last dim. Two whole dims of constant sizes, or one tile's dim twice (`x[tile,
        tile]`, a block on the matrix's diagonal), whose diagonal at offset 0 is the tile's dim."""
        value = self.to_tval(value)
        rank = len(value.shape)
        first_axis, second_axis = (self.axis_of(value, d, "torch.diagonal") for d in (dim1, dim2))
        if first_axis == second_axis:
            raise self.error(exc.ShapeMismatch, f"torch.diagonal of dims {dim1} and {dim2}: they are the same dim")
        offset = self.compile_time_int(offset, "torch.diagonal")
        dim = value.shape[first_axis]
        one_tile = dim is value.shape[second_axis] and dim is not ONE and not isinstance(dim, RDim)
        if one_tile and offset:
            raise self.error(exc.NotSupported, f"torch.diagonal at offset {offset} of a tile's dim taken twice: its "
                             "lanes leave the tile; take the diagonal of whole dims")
        if not one_tile:
            rows, columns = (self.constant_extent(value.shape[a], "torch.diagonal") for a in (first_axis, second_axis))
            start = max(-offset, 0)
            length = min(rows - start, columns - max(offset, 0))
            if length < 1:
                raise self.error(exc.ShapeMismatch, f"torch.diagonal at offset {offset} of a {rows}x{columns} matrix has "
                                 "no lanes (device values have no empty dims)")
        row = place(f"tl.arange(0, {dim.size_expr})", [first_axis], rank)
        value = self.squeeze(self.relaned(value, second_axis, 1, lambda _: f"{row} + {offset}", "torch.diagonal"), second_axis)
        first_axis -= first_axis > second_axis
        if not one_tile:
            value = self.part(value, first_axis, start, start + length, 1, "torch.diagonal")
        return self.permute(value, [a for a in range(rank - 1) if a != first_axis] + [first_axis])

    def diag(self, value: Any, diagonal: Any = 0) -> TVal:
        """torch.diag: of a matrix its diagonal at offset `diagonal`; of a vector of n lanes the
        square matrix of n + |diagonal| lanes with the vector on that diagonal, 0 elsewhere."""
        value = self.to_tval(value)
        if len(value.shape) == 2:
            return self.diagonal(value, diagonal)
        if len(value.shape) != 1:
            raise self.error(exc.ShapeMismatch, f"torch.diag of a rank-{len(value.shape)} value; it takes 1 or 2 dims")
        offset = self.compile_time_int(diagonal, "torch.diag")
        extent = self.constant_extent(value.shape[0], "torch.diag")
        if offset:
            value = self.relaned(value, 0, extent + abs(offset), lambda j: j, "torch.diag")
        dim = value.shape[0]
        rows, columns = (place(f"tl.arange(0, {dim.size_expr})", [axis], 2) for axis in (0, 1))
        on_diagonal = self.make(torch.bool, (dim, dim), lambda a: f"({columns} - {rows} == {offset})", [], "on_diagonal")
        line = self.unsqueeze(value, 1 if offset >= 0 else 0)
        return self.to_dtype(self.where(on_diagonal, line, 0), value.dtype)

    def trace(self, value: Any) -> TVal:
        """torch.trace: the sum of a matrix's diagonal."""
        value = self.to_tval(value)
        if len(value.shape) != 2:
            raise self.error(exc.ShapeMismatch, f"torch.trace of a rank-{len(value.shape)} value; it takes a matrix")
        return self.reduce("sum", self.diagonal(value), [0])

    def compile_time_int(self, k: Any, what: str) -> int:
        """`k` as an int: a literal, or a host value whose text is one (hl.specialize, static shapes)."""
        text = getattr(k, "expr", None)
        if isinstance(k, int) and not isinstance(k, bool):
            return int(k)
        if isinstance(text, str) and text.lstrip("-").isdigit():
            return int(text)
        raise self.error(exc.NotSupported, f"{what}: {getattr(k, 'expr', k)!s} is not a compile-time constant; device code takes "
                         "sizes and positions known at compile time (pass a run-time one through hl.specialize)")
