"""Shape-changing views of device values for the device compiler: `view`/`reshape` (unit dims put
in or taken out, adjacent dims merged into one or, through split_dims.py, one dim split into
adjacent ones), `torch.stack` of tiles along a new dim, `torch.cat`, and sizes
that name merged dims (`tile.block_size * 2`). A merged dim (values.MergedDim) keeps what its
extent is made of, so a [tile, 2] value reshaped to [2 * tile] matches a slice of length
`tile.block_size * 2` in a matrix product."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import exc
from .values import (ONE, BlockDim, DimSize, JaggedDim, MergedDim, PartDim, RDim, TVal, extent_key, fixed_dim, place, placed_mask,
                     product_key, same_dim, size_arguments)


def power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


class ReshapeMixin:
    def dim_value(self, dim: Any) -> int:
        """A dim's extent at bind time."""
        if isinstance(dim, MergedDim):
            return dim.size_value
        if isinstance(dim, BlockDim):
            return self.session.block_value(dim.block_id) if dim.block_id >= 0 else int(dim.size_expr)
        return 1 if dim is ONE else dim.size_value

    def merged_dim(self, parts: list) -> Any:
        """The dim of adjacent `parts` viewed as one (a single part is itself)."""
        flat = [p for part in parts for p in (part.parts if isinstance(part, MergedDim) else (part,)) if p is not ONE]
        if len(flat) == 1:
            return flat[0]
        if isinstance(flat[0], PartDim) and flat[0].pieces == tuple(flat):  # a split's pieces, together again
            return flat[0].whole
        padded = self.merged_padded(flat)
        if padded is not None:
            return padded
        for part in flat:
            if isinstance(part, JaggedDim):
                raise self.error(exc.NotSupported, "merging a jagged tile's dim (its lanes' ends would be lost)")
            whole = isinstance(part, RDim) and extent_key(part) is not None and power_of_two(part.size_value)
            if not (isinstance(part, (BlockDim, PartDim)) and extent_key(part) is not None) and not whole:
                self.require_whole(flat, "merging dims")
                raise self.error(exc.ShapeMismatch, f"dims {self.shape_text(tuple(flat))} merged into one: each must be a "
                                 "tile's block or a whole dim of a constant power-of-two size")
        size = "(" + " * ".join(p.size_expr for p in flat) + ")"
        masked = list(dict.fromkeys(m for i in range(len(flat)) if (m := placed_mask(tuple(flat), i))))
        mask = None
        if masked:
            sizes = ", ".join(p.size_expr for p in flat)
            mask = f"tl.reshape(tl.broadcast_to({' & '.join(masked)}, [{sizes}]), [{size}])"
        value = 1
        for part in flat:
            value *= self.dim_value(part)
        return MergedDim(tuple(flat), size, f"tl.arange(0, {size})", value, mask)

    def padded_run(self, dims: list) -> int | None:
        """The bind-time extent of `dims` where they are a whole dim of a size the compile does not
        know to be a power of two (a run-time size, or a constant one that is not) followed by
        constant power-of-two dims: the shape split_dims.split_padded makes of a whole dim, whose
        merge is a whole dim again. None for other dims."""
        first = dims[0] if dims else None
        if not isinstance(first, RDim) or first.looped:
            return None
        key = extent_key(first)
        if key is not None and power_of_two(first.size_value):
            return None
        size = first.size_value
        for dim in dims[1:]:
            extent = self.fixed_extent(dim)
            if extent is None or not power_of_two(extent):
                return None
            size *= extent
        return size

    def fixed_extent(self, dim: Any) -> int | None:
        """A dim's extent as a constant: a constant dim's, or the bind-time size of a whole dim of a
        run-time size (a literal size the same at bind time is that dim: dims are unified by
        value), which becomes a constant of the kernel's specialization where pin_extent is
        called. None for a tile's dims."""
        key = extent_key(dim)
        if key is not None:
            return int(key[1]) if not key[0] and Fraction(key[1]).denominator == 1 else None
        return dim.size_value if isinstance(dim, RDim) and not dim.looped else None

    def pin_extent(self, dim: Any) -> int:
        """fixed_extent of `dim`, its run-time size joining the specialization."""
        if isinstance(dim, RDim) and not self.session.rdim_host[id(dim)][1]:
            self.guard_equal(self.session.rdim_host[id(dim)][0], str(dim.size_value))
        return self.fixed_extent(dim)

    def merged_padded(self, flat: list) -> RDim | None:
        """A padded_run merged back into one whole dim: the first dim's padded block times the
        others lays the elements out as the whole dim of their product does, and its mask holds
        where the first's does. A run-time size is the first's times the others' product (where a
        whole dim of that bind-time size exists, the two sizes' equality joins the specialization).
        None for other dims."""
        size = self.padded_run(flat)
        if size is None:
            return None
        first, factor = flat[0], size // flat[0].size_value
        for dim in flat[1:]:
            self.pin_extent(dim)
        host, static = self.session.rdim_host[id(first)]
        if static:
            merged = self.rdim_for(size, str(size), str(size))
        else:
            merged = self.rdim_for(size, f"({first.size_param} * {factor})", f"({host}) * {factor}")
        self.require_whole([merged], "merging dims")
        return merged

    def scaled_size(self, size: DimSize, factor: Any) -> DimSize | None:
        """`size * factor` as a size naming a merged dim (a block size times a power of two), or
        None when it is only a number."""
        if isinstance(factor, bool) or not isinstance(factor, int) or not power_of_two(factor):
            return None
        if size.dim is None or extent_key(size.dim) is None:
            return None
        if factor == 1:
            return size
        dim = self.merged_dim([size.dim, fixed_dim(factor)])
        return DimSize(dim.size_expr, dim.size_value, size.dtype, dim=dim)

    def view(self, value: TVal, sizes: tuple) -> TVal:
        """`value.view(*sizes)` / `reshape`: the value's dims in the same order, with unit dims put in
        or taken out, runs of adjacent dims merged into one (a size naming their product, or -1 for
        whatever the other sizes leave) and dims split into adjacent ones (split_dims.py)."""
        sizes = size_arguments(sizes)
        if sum(1 for s in sizes if isinstance(s, int) and not isinstance(s, bool) and s == -1) > 1:
            raise self.error(exc.ShapeMismatch, "view() with more than one -1")
        real = [d for d in value.shape if d is not ONE]
        targets = [None if isinstance(s, int) and not isinstance(s, bool) and s == -1 else self.shape_from_sizes([s])[0]
                   for s in sizes]
        quotient = self.quotient_target(real, targets) if None in targets else None
        if quotient is not None:
            resolved = [quotient if t is None else t for t in targets]
            pairs = self.match_dims(real, [t for t in resolved if t is not ONE], value, targets)
            if sum(len(sources) for sources, _ in pairs) != len(real):
                raise self.mismatch(value, targets)
            return self.viewed_value(value, resolved, pairs)
        wanted = [t for t in targets if t is not ONE]
        split = wanted.index(None) if None in wanted else len(wanted)
        head = self.match_dims(real, wanted[:split], value, targets)
        used = sum(len(sources) for sources, _ in head)
        tail = [(s[::-1], t[::-1]) for s, t in self.match_dims(real[used:][::-1], wanted[split + 1 :][::-1], value, targets)][::-1]
        rest = real[used : len(real) - sum(len(sources) for sources, _ in tail)]
        if None not in wanted and rest:
            self.require_whole(real, "a view that merges dims")
            raise self.mismatch(value, targets)
        pairs = head + ([(rest, [None])] if None in wanted else []) + tail
        return self.viewed_value(value, targets, pairs)

    def viewed_value(self, value: TVal, targets: list, pairs: list) -> TVal:
        """`value` viewed through match_dims' `pairs` of its dims and the view's non-unit `targets`."""
        viewed = iter(self.viewed_dims(pairs, value))
        shape = tuple(ONE if t is ONE else next(viewed) for t in targets)
        return value if shape == value.shape else self.reshape_to(value, shape)

    def quotient_target(self, real: list, targets: list) -> Any:
        """The dim a view's -1 stands for where the compile knows every extent: the source's extent
        over the other targets' (a [tile] value viewed as [-1, 2] gives a PartDim of half the
        block, which match_dims compares and split_dim splits by its key; ONE where nothing is
        left). None where an extent is unknown or the quotient is not a block times a power-of-two
        factor or a whole number: view() then lets the -1 take the dims the others leave."""
        whole, known = product_key(real), product_key([t for t in targets if t is not None and t is not ONE])
        if known is None:
            return None
        if whole is None:
            return self.run_time_quotient(real, known)
        ids = list(whole[0])
        for block_id in known[0]:
            if block_id not in ids:
                return None
            ids.remove(block_id)
        factor = Fraction(whole[1]) / Fraction(known[1])
        if not ids and factor.denominator != 1:
            return None
        if not ids and factor == 1:
            return ONE
        size_value = 1
        for dim in real:
            size_value *= self.dim_value(dim)
        for dim in targets:
            size_value //= 1 if dim is None or dim is ONE else self.dim_value(dim)
        key = (tuple(ids), int(factor) if factor.denominator == 1 else factor)
        return PartDim(key, "", "", size_value)

    def run_time_quotient(self, real: list, known: tuple) -> RDim | None:
        """quotient_target where one source dim is a whole dim of a run-time size n and the targets
        other than -1 (extent_key `known`) leave n // d for the -1, d a power of two (rows of n as
        [-1, 2]): the whole dim of that run-time size (split_padded guards n == (n // d) * d).
        None otherwise."""
        unknown = [dim for dim in real if extent_key(dim) is None]
        if len(unknown) != 1 or not isinstance(unknown[0], RDim) or unknown[0].looped:
            return None
        whole = unknown[0]
        others = product_key([dim for dim in real if dim is not whole])
        if others is None or others[0] != known[0]:
            return None
        divisor = Fraction(known[1]) / Fraction(others[1])
        if divisor.denominator != 1 or not power_of_two(int(divisor)) or whole.size_value % int(divisor):
            return None
        if divisor == 1:
            return whole
        host = self.session.rdim_host[id(whole)][0]
        d = int(divisor)
        return self.rdim_for(whole.size_value // d, f"({whole.size_param} // {d})", f"({host}) // {d}")

    def viewed_dims(self, pairs: list, value: TVal) -> list:
        """The dims of match_dims' pairs: a run of source dims merged into one (none: a unit dim), or
        one source dim split into its run of targets."""
        dims: list = []
        for sources, targets in pairs:
            if len(targets) > 1:
                dims.extend(self.split_dim(sources[0], targets, value))
            else:
                dims.append(self.merged_dim(sources) if sources else ONE)
        return dims

    def match_dims(self, source: list, targets: list, value: TVal, shown: list | None = None) -> list[tuple[list, list]]:
        """`source` dims (from the start) paired with the `targets` they view, in order: a dim the
        same as its target, a run of dims merged into one target, or a dim split into a run of
        targets (extents compared by values.extent_key). A mismatch names the view's `shown`
        sizes (default: `targets`)."""
        pairs: list = []
        at = done = 0
        while done < len(targets):
            target = targets[done]
            if at < len(source) and same_dim(target, source[at]):
                pairs.append(([source[at]], [target]))
                at, done = at + 1, done + 1
                continue
            want = extent_key(target)
            merged = next((end for end in range(at + 2, len(source) + 1)
                           if want is not None and product_key(source[at:end]) == want), None)
            whole = extent_key(source[at]) if at < len(source) else None
            split = next((end for end in range(done + 2, len(targets) + 1)
                          if whole is not None and product_key(targets[done:end]) == whole), None)
            if merged is None and split is None:
                merged, split = self.padded_match(source, at, targets, done)
            if merged is not None:
                pairs.append((source[at:merged], [target]))
                at, done = merged, done + 1
            elif split is not None:
                pairs.append(([source[at]], targets[done:split]))
                at, done = at + 1, split
            else:
                self.require_whole(source + [t for t in targets if t is not None], "a view that merges or splits dims")
                raise self.mismatch(value, targets if shown is None else shown)
        return pairs

    def padded_match(self, source: list, at: int, targets: list, done: int) -> tuple[int | None, int | None]:
        """match_dims' merge (the end of the source run) or split (the end of the target run) of
        dims whose extents the compile does not know, by their bind-time extents: a padded_run of
        source dims merged into a whole-dim target, or a whole dim split into a padded_run of
        targets (its run-time size's relation to theirs joins the specialization)."""
        target = targets[done]
        if isinstance(target, RDim) and not target.looped:
            merged = next((end for end in range(at + 2, len(source) + 1)
                           if self.padded_run(source[at:end]) == target.size_value), None)
            if merged is not None:
                return merged, None
        whole = source[at] if at < len(source) else None
        if isinstance(whole, RDim) and not whole.looped:
            return None, next((end for end in range(done + 2, len(targets) + 1)
                               if self.padded_run(targets[done:end]) == whole.size_value), None)
        return None, None

    def mismatch(self, value: TVal, targets: list) -> exc.CompileError:
        shown = "[" + ", ".join("-1" if t is None else self.dim_text(t) for t in targets) + "]"
        return self.error(exc.ShapeMismatch, f"view of {self.shape_text(value.shape)} as {shown}: only unit dims may be "
                          "put in or taken out, adjacent dims merged into one, and a dim split into adjacent ones")

    def stack(self, values: Any, dim: int = 0) -> TVal:
        """`torch.stack(values, dim)`: device values of one shape (after broadcasting) along a new dim
        of len(values) positions, which must be a power of two (Triton's blocks are)."""
        values = [self.to_tval(v) for v in values]
        if not values or not power_of_two(len(values)):
            raise self.error(exc.NotSupported, f"torch.stack of {len(values)} values; stack a power of two of them")
        shape: tuple = ()
        for v in values:
            shape = self.broadcast_shape(shape, v.shape)
        dtype = self.result_dtype(values)
        rank = len(shape) + 1
        dim = dim % rank
        parts = [self.broadcast_to(self.to_dtype(v, dtype), shape) for v in values]
        joined = self.join_halves(parts, shape, dtype)
        if dim == rank - 1:
            return joined
        order = list(range(rank - 1))
        order.insert(dim, rank - 1)
        return self.permute(joined, order)

    def cat(self, values: Any, dim: int = 0) -> TVal:
        """`torch.cat(values, dim)` (`concat`, `concatenate`): device values of one shape but along
        `dim`. A power of two of values of one extent there are stacked along a new dim before it,
        the two merged (the first value's elements first); joining whole dims of a power-of-two
        extent gives the whole dim of their total (a run-time extent joining the specialization),
        so the result meets other values of that dim. Other counts, different extents and whole
        dims of other extents join by lanes (cat_by_lanes)."""
        values = [self.to_tval(v) for v in values]
        if not values:
            raise self.error(exc.ShapeMismatch, "torch.cat of no values")
        shape = values[0].shape
        if not shape:
            raise self.error(exc.ShapeMismatch, "torch.cat of zero-dim values; they have no dim to join along")
        dim = dim % len(shape)
        matches = lambda a, b: same_dim(a, b) or extent_key(a) is not None and extent_key(a) == extent_key(b)  # noqa: E731
        for v in values[1:]:
            if len(v.shape) != len(shape) or not all(matches(a, b) for d, (a, b) in enumerate(zip(v.shape, shape)) if d != dim):
                raise self.error(exc.ShapeMismatch, f"torch.cat of {self.shape_text(shape)} and {self.shape_text(v.shape)} "
                                 f"along dim {dim}: the other dims must be the same")
        if len(values) == 1:
            return values[0]
        extent = self.fixed_extent(shape[dim]) if isinstance(shape[dim], RDim) else None
        if (not power_of_two(len(values)) or not all(matches(v.shape[dim], shape[dim]) for v in values)
                or extent is not None and not power_of_two(extent)):
            return self.cat_by_lanes(values, dim)
        stacked = self.stack([self.reshape_to(v, shape) for v in values], dim)
        inner = stacked.shape[dim + 1]
        extent = self.fixed_extent(inner) if isinstance(inner, RDim) else None
        if extent is not None and power_of_two(extent):
            self.pin_extent(inner)
            total = len(values) * extent
            joined = self.rdim_for(total, str(total), str(total))
            self.require_whole([inner, joined], "torch.cat")
        else:
            joined = self.merged_dim([stacked.shape[dim], inner])
        return self.reshape_to(stacked, stacked.shape[:dim] + (joined,) + stacked.shape[dim + 2:])

    def cat_by_lanes(self, values: list, axis: int) -> TVal:
        """torch.cat of values whose extents along `axis` are constants (whole dims; a run-time
        size joins the specialization) of any count: the result is the whole dim of their total,
        and its lane j holds the last value whose offset is at most j, at lane j - offset
        (slicing.relaned)."""
        self.require_whole([v.shape[axis] for v in values], "torch.cat")
        extents = [self.constant_extent(v.shape[axis], "torch.cat") for v in values]
        dtype = self.result_dtype(values)
        out, offset = None, 0
        for value, extent in zip(values, extents):
            part = self.relaned(self.to_dtype(value, dtype), axis, sum(extents), lambda j, o=offset: f"{j} - {o}", "torch.cat")
            if out is not None:
                position = place(f"tl.arange(0, {part.shape[axis].size_expr})", [axis], len(part.shape))
                part = self.make(dtype, part.shape, lambda a, o=offset: f"tl.where({position} >= {o}, {a[0]}, {a[1]})", [part, out], "cat")
            out, offset = part, offset + extent
        return out

    def join_halves(self, parts: list, shape: tuple, dtype: Any) -> TVal:
        """`parts` stacked along a new last dim: tl.join of the stacks of the two halves gives
        [..., n/2, 2] (the second index picks the half), moved to [..., 2, n/2] and merged."""
        if len(parts) == 1:
            return parts[0]
        half = len(parts) // 2
        low, high = self.join_halves(parts[:half], shape, dtype), self.join_halves(parts[half:], shape, dtype)
        new = fixed_dim(len(parts))
        if half == 1:
            return self.make(dtype, shape + (new,), lambda a: f"tl.join({a[0]}, {a[1]})", [low, high])
        rank = len(shape) + 2
        order = tuple(range(rank - 2)) + (rank - 1, rank - 2)
        sizes = ", ".join(d.size_expr for d in shape + (new,))
        return self.make(dtype, shape + (new,),
                         lambda a: f"tl.reshape(tl.permute(tl.join({a[0]}, {a[1]}), {order}), [{sizes}])", [low, high])
