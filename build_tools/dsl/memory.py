"""Loads and stores for the device compiler: turns an index list on a host tensor into a
Triton pointer (or block pointer / tensor descriptor) expression, its mask, and the result shape."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import torch

from . import exc
from .values import (DOT_MIN_DIM, ONE, same_dim, same_shape, BlockDim, BlockSizeInt, DeviceSlice, DimSize, HostScalar, HostTensor,
                     JaggedDim, MergedDim, PartDim, RDim, TileVal, TVal, extent_key, place, placed_mask, tl_dtype)


@dataclass
class Address:
    shape: tuple
    terms: list = field(default_factory=list)  # (text or child index, axes, stride param, offset text)
    masks: list = field(default_factory=list)  # (mask text or child index, axes)
    children: list = field(default_factory=list)
    block_ok: bool = True
    block_offsets: list = field(default_factory=list)
    block_dims: list = field(default_factory=list)
    tensor_dims: list = field(default_factory=list)  # the dims a block access spans
    # leading dims indexed by scalars (`k[b, h, tile, :]`): a descriptor merges them into the rows of
    # the first block dim
    row_terms: list = field(default_factory=list)
    # block dims (by position) of tiles that end inside the tensor, at a bound other than its size
    # (`hl.tile(0, min(tile_m.end, n))`): a block load reads the tensor past the tile's end, and the
    # rows there are zeroed after it, as a masked pointer load leaves them
    inner_ends: list = field(default_factory=list)
    # where the innermost block dim's tiles start from: a launcher expression (their offsets are it
    # plus multiples of the block), None for a device value
    innermost_begin: str | None = "0"


class MemoryMixin:
    # ------------------------------------------------------------------ index lists
    def index_list(self, node: ast.AST) -> list:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out: list = []
        for item in items:
            value = self.expr(item)
            if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
                out.extend(value)
            else:
                out.append(value)
        return out

    def shape_from_sizes(self, sizes: Any) -> tuple:
        if isinstance(sizes, (TileVal, int, HostScalar)) or isinstance(sizes, TVal):
            sizes = [sizes]
        shape = []
        for size in sizes:
            if isinstance(size, TileVal):
                shape.append(size.dim)
            elif isinstance(size, DimSize):  # a device value's size(i): that dim
                shape.append(size.dim)
            elif isinstance(size, BlockSizeInt):  # a registered block size: the dim of its tiles
                bs = self.block_constexpr(size.block_id, None)
                shape.append(BlockDim(size.block_id, bs, self.builder.assign(f"tl.arange(0, {bs})", "indices"), None, bs))
            elif isinstance(size, bool) or size is None:
                raise self.error(exc.TypeMismatch, f"{size!r} is not a size")
            elif isinstance(size, int) and size == 1:
                shape.append(ONE)
            elif isinstance(size, int):
                shape.append(self.rdim_for(size, str(size), str(size)))
            elif isinstance(size, HostScalar):
                shape.append(self.rdim_for(int(size.value), size.expr, self.session.host_expr(size)))
            else:
                raise self.error(exc.NotSupported, f"size {type(size).__name__} in a device allocation; sizes must be tiles or host integers")
        return tuple(shape)

    def rdim_for(self, size_value: int, size_param: str, host_expr: str) -> RDim:
        key = size_value
        if key in self.rdims:
            return self.shared_rdim(self.rdims[key], host_expr)
        rdim_id, chunk = self.session.rdim(size_value)
        static = size_param.lstrip("-").isdigit()
        if not static and self.session.is_specialized_size(size_value):
            size_param = host_expr = str(size_value)
            static = True
        looped = chunk is not None
        rdim = RDim(rdim_id, size_value, size_param, looped, chunk, needs_mask=True)
        if looped:
            rdim.needs_mask = not (static and size_value % chunk == 0)
            self.builder.constexpr(rdim.size_expr, str(chunk))
        else:
            block = max(1, 1 << (max(size_value, 1) - 1).bit_length())
            # a dim below DOT_MIN_DIM may be padded later, if it turns out to feed a dot
            rdim.needs_mask = not (static and block == size_value and size_value >= DOT_MIN_DIM)
            launcher = str(block) if static else f"triton.next_power_of_2(max(1, {host_expr}))"
            self.builder.constexpr(rdim.size_expr, launcher)
            self.setup_lines.append(f"    {rdim.index} = tl.arange(0, {rdim.size_expr})")
            if rdim.needs_mask:
                self.setup_lines.append(f"    {rdim.mask} = {rdim.index} < {size_param}")
        self.session.note_rdim_expr(rdim, host_expr, static)
        self.rdims[key] = rdim
        return rdim

    def shared_rdim(self, rdim: RDim, host_expr: str) -> RDim:
        """`rdim` for another size of the same bind-time value (dims are unified by value): when
        either size varies at run time, their equality joins the kernel's specialization."""
        self.guard_equal(self.session.rdim_host[id(rdim)][0], host_expr)
        return rdim

    def guard_equal(self, a: str, b: str) -> None:
        """The compiled code assumes that the sizes `a` and `b` (launcher expressions, equal at bind
        time) are equal: unless both are literals, the equality joins the specialization."""
        if a != b and not (a.isdigit() and b.isdigit()):
            self.session.bake(f"({a}) == ({b})", True, guard=True)

    def index_width(self, tensor: HostTensor) -> bool:
        """Whether offsets into `tensor` need 64 bits; with run-time sizes, the bind-time answer
        joins the specialization."""
        big = tensor.meta.numel() >= 2**31
        if not self.session.static_sizes(tensor):
            self.session.bake(f"{tensor.host_expr}.numel() >= 2**31", big, guard=True)
        return big

    # ------------------------------------------------------------------ addresses
    def address(self, tensor: HostTensor, index: list, node: ast.AST) -> Address:
        self.session.note_memory_access(self.open_device_loops)
        meta = tensor.meta
        rank = meta.dim()
        items = []
        for item in index:
            items.extend(item) if isinstance(item, (tuple, list)) else items.append(item)
        if any(item is Ellipsis for item in items):
            at = items.index(Ellipsis)
            used = sum(1 for i in items if i is not None and i is not Ellipsis)
            items = items[:at] + [slice(None)] * (rank - used) + items[at + 1 :]
        used = sum(1 for i in items if i is not None)
        if used > rank:
            raise self.error(exc.ShapeMismatch, f"{used} indices for a rank-{rank} tensor", node)
        items += [slice(None)] * (rank - used)
        addr = Address(shape=())
        shape: list = []
        jagged: list[int] = []  # axes of jagged tiles' dims, masked once the access's dims are known
        d = 0
        for item in items:
            if item is None:
                shape.append(ONE)
                addr.block_ok = False
                continue
            stride = self.builder.param(f"{tensor.host_expr}.stride({d})", f"{tensor.param}_stride_{d}")
            if isinstance(item, TileVal):
                shape.append(item.dim)
                addr.innermost_begin = item.begin_host
                addr.terms.append((item.dim.index, [len(shape) - 1], stride, None))
                addr.block_offsets.append(item.offset)
                addr.block_dims.append(item.dim)
                if isinstance(item.dim, JaggedDim):  # per-lane ends: pointers only
                    jagged.append(len(shape) - 1)
                    addr.block_ok = False
                elif item.dim.mask:
                    addr.masks.append((item.dim.mask, [len(shape) - 1]))
                size_value = self.session.tile_extent(item)
                if size_value is None or size_value != meta.size(d):
                    if item.dim.mask:
                        addr.inner_ends.append(len(addr.block_dims) - 1)
                else:  # block indexing bounds the tile by the tensor's size
                    self.guard_equal(item.end_host, self.session.size_host_expr(tensor, d))
            elif isinstance(item, slice):
                rdim, start = self.slice_dim(tensor, d, item, node)
                if rdim is ONE:
                    shape.append(ONE)
                    addr.terms.append((start, [], stride, None))
                    addr.block_ok = False
                else:
                    shape.append(rdim)
                    addr.innermost_begin = "0"
                    addr.terms.append((rdim.index, [len(shape) - 1], stride, start))
                    if rdim.mask:
                        addr.masks.append((rdim.mask, [len(shape) - 1]))
                    addr.block_offsets.append(f"roffset_{rdim.rdim_id}" if rdim.looped else "0")
                    addr.block_dims.append(rdim)
                    if start != "0" or rdim.size_value != meta.size(d):
                        addr.block_ok = False
                    else:
                        self.guard_equal(self.session.rdim_host[id(rdim)][0], self.session.size_host_expr(tensor, d))
            elif isinstance(item, DeviceSlice):
                dim, term, masks = self.device_slice(tensor, d, item, stride, len(shape), node)
                shape.append(dim)
                addr.terms.append(term)
                addr.masks.extend(masks)
                addr.block_ok = False
            elif isinstance(item, TVal) and item.shape != ():
                axes = list(range(len(shape), len(shape) + len(item.shape)))
                shape.extend(item.shape)
                addr.children.append(item)
                addr.terms.append((len(addr.children) - 1, axes, stride, None))
                for axis, dim in zip(axes, item.shape):
                    if isinstance(dim, JaggedDim):
                        jagged.append(axis)
                    elif dim is not ONE and dim.mask:
                        addr.masks.append((dim.mask, [axis]))
                addr.block_ok = False
            elif isinstance(item, (int, HostScalar, TVal)) and not isinstance(item, bool):
                if isinstance(item, TVal):
                    addr.children.append(item)
                    term = (len(addr.children) - 1, [], stride, None)
                else:
                    term = (self.atom(item), [], stride, None)
                addr.terms.append(term)
                if addr.tensor_dims or shape:
                    addr.block_ok = False
                else:
                    addr.row_terms.append(term)
                d += 1
                continue
            else:
                raise self.error(exc.NotSupported, f"index of type {type(item).__name__}", node)
            addr.tensor_dims.append(d)
            d += 1
        addr.shape = tuple(shape)
        addr.masks += [(placed_mask(addr.shape, axis), list(range(len(shape)))) for axis in jagged]
        return addr

    def slice_dim(self, tensor: HostTensor, d: int, item: slice, node: ast.AST) -> tuple:
        if item.step not in (None, 1):
            raise self.error(exc.NotSupported, "slices with a step", node)
        if item.start is None and item.stop is None and tensor.meta.size(d) in self.rdims:
            rdim = self.shared_rdim(self.rdims[tensor.meta.size(d)], self.session.size_host_expr(tensor, d))
            return (ONE if rdim.size_value == 1 and rdim.size_param == "1" else rdim), "0"
        whole = item.start is None and item.stop is None
        size = tensor.meta.size(d)
        full = size if whole and self.session.is_specialized_size(size) else self.session.tensor_size(tensor, d, self.builder)
        lower = 0 if item.start is None else item.start
        upper = full if item.stop is None else item.stop
        if isinstance(lower, TVal) or isinstance(upper, TVal):
            raise self.error(exc.NotSupported, "slice bounds must be host values, or read `start:start + length`", node)
        lo_v = self.int_value(lower, node)
        hi_v = self.int_value(upper, node)
        size_value = max(hi_v - lo_v, 0)
        lo_s, hi_s = self.atom(lower), self.atom(upper)
        if whole:
            size_param, host = self.atom(full), self.session.host_expr(full) if isinstance(full, HostScalar) else str(full)
        else:
            static = isinstance(lower, int) and isinstance(upper, int)
            size_param = str(size_value) if static else f"({hi_s} - {lo_s})"
            host = str(size_value) if static else f"({self.host_expr_of(upper)}) - ({self.host_expr_of(lower)})"
        if size_value == 1 and size_param == "1":
            return ONE, lo_s
        return self.rdim_for(size_value, size_param, host), lo_s

    def device_slice(self, tensor: HostTensor, d: int, item: DeviceSlice, stride: str, axis: int, node: ast.AST) -> tuple:
        """The dim, address term and masks of `tensor[..., start:start + length, ...]` along dim `d`
        at `axis` of the access, with a start known only on the device. A size as length (a tile's
        block size, times a power of two) gives a copy of its dim (so the value matches that tile's
        values) whose positions past the tensor's end are masked; a host integer, the whole dim of
        that size."""
        start, length = item.start, item.length
        if isinstance(start, TVal) and start.shape != ():
            raise self.error(exc.ShapeMismatch, "a slice's start must be a scalar", node)
        if isinstance(start, bool) or not isinstance(start, (int, HostScalar, TVal)):
            raise self.error(exc.TypeMismatch, f"a slice's start of type {type(start).__name__}", node)
        begin = self.atom(start)
        end = self.atom(self.session.tensor_size(tensor, d, self.builder))
        if isinstance(length, DimSize) and isinstance(length.dim, JaggedDim):
            raise self.error(exc.NotSupported, "a slice as long as a jagged tile's block", node)
        if isinstance(length, DimSize) and extent_key(length.dim) is not None and not isinstance(length.dim, RDim):
            base = length.dim
            index = self.builder.assign(f"{begin} + tl.arange(0, {base.size_expr})", "indices")
            bound = self.builder.assign(f"{index} < {end}", "mask")
            mask = bound if base.mask is None else self.builder.assign(f"{bound} & ({base.mask})", "mask")
            if isinstance(base, MergedDim):
                dim: Any = MergedDim(base.parts, base.size_expr, index, base.size_value, mask)
            elif isinstance(base, PartDim):
                dim = PartDim(base.key, base.size_expr, index, base.size_value, mask)
            else:
                dim = BlockDim(base.block_id, base.size_expr, index, mask, base.numel_expr)
            return dim, (index, [axis], stride, None), [(mask, [axis])]
        if isinstance(length, bool) or not isinstance(length, (int, HostScalar)):
            raise self.error(exc.NotSupported, "a slice with a device start needs a length that is a host integer or a "
                             "size such as tile.block_size (times a power of two)", node)
        rdim = self.rdim_for(self.int_value(length, node), self.atom(length),
                             self.host_expr_of(length) if isinstance(length, HostScalar) else str(length))
        self.require_whole([rdim], "a slice with a device start")
        masks = [(f"(({begin} + {rdim.index}) < {end})", [axis])] + ([(rdim.mask, [axis])] if rdim.mask else [])
        return rdim, (rdim.index, [axis], stride, begin), masks

    def int_value(self, value: Any, node: ast.AST) -> int:
        if isinstance(value, HostScalar):
            return int(value.value)
        if isinstance(value, int):
            return value
        raise self.error(exc.NotSupported, "slice bounds must be host integers", node)

    def render_address(self, addr: Address, atoms: list[str], extra_mask: str | None, big: bool) -> tuple[str, str | None]:
        rank = len(addr.shape)
        parts = []
        for source, axes, stride, start in addr.terms:
            idx = atoms[source] if isinstance(source, int) else source
            if start not in (None, "0"):
                idx = f"({idx} + {start})"
            if big:
                idx = f"{idx}.to(tl.int64)"
            parts.append(f"{place(idx, axes, rank)} * {stride}")
        offset = " + ".join(parts) if parts else "0"
        masks = [place(m, axes, rank) for m, axes in addr.masks]
        if extra_mask is not None:
            masks.append(extra_mask)
        mask = " & ".join(f"({m})" for m in masks) if masks else None
        return offset, mask

    # ------------------------------------------------------------------ loads and stores
    def load(self, tensor: HostTensor, index: list, extra_mask: Any, node: ast.AST, eviction_policy: str | None = None) -> TVal:
        addr = self.address(tensor, index, node)
        site, position = self.session.memory_site("load", (node, tensor.param))
        strategy = self.session.indexing(site)
        policy = eviction_policy or self.session.eviction(position)
        fixed_evict = f", eviction_policy={policy!r}" if policy and policy != "reread" else ""
        children = list(addr.children)
        mask_child = None
        if extra_mask is not None:
            extra_mask = self.to_tval(extra_mask) if not isinstance(extra_mask, bool) else extra_mask
            if isinstance(extra_mask, TVal):
                children.append(extra_mask)
                mask_child = len(children) - 1
        big = self.index_width(tensor)
        use_block = (strategy != "pointer" and addr.block_ok and extra_mask is None and addr.shape
                     and tensor.meta.dtype != torch.bool and (strategy == "tensor_descriptor" or not addr.row_terms))
        shape = addr.shape

        tma_flag = self.tma_flag(tensor, addr, load=True) if use_block and strategy == "tensor_descriptor" else None
        self.builder.load_flags.append(tma_flag if tma_flag != "False" else None)

        def zeroed_past_ends(loaded: str, axes: list[int]) -> str:
            """`loaded` with the elements past the tile ends of `axes` (inside the tensor) zeroed."""
            if not axes:
                return loaded
            masks = " & ".join(place(addr.block_dims[a].mask, [a], len(shape)) for a in axes)
            return f"tl.where({masks}, {loaded}, 0)"

        def render(atoms: list[str]) -> str:
            evict = fixed_evict
            if policy == "reread":  # decided per materialization: a looped reduction's pass or not
                evict = f", eviction_policy={'evict_last' if self.reduction_pass else 'evict_first'!r}"
            if use_block:
                bp = self.block_pointer(tensor, addr, strategy)
                if strategy == "tensor_descriptor":
                    fallback_offset, fallback_mask = self.render_address(addr, atoms, None, big)
                    fallback_masked = f", mask={fallback_mask}, other=0" if fallback_mask else ""
                    fallback = f"tl.load({tensor.param} + ({fallback_offset}){fallback_masked}{evict})"
                    loaded = f"{bp}.load([{', '.join(self.block_offsets_of(tensor, addr, atoms))}])"
                    # a partial tile's rows past a merged slice are the next slice's
                    merged_end = [0] if addr.row_terms and addr.block_dims[0].mask and 0 not in addr.inner_ends else []
                    loaded = zeroed_past_ends(loaded, merged_end + addr.inner_ends)
                    return f"({loaded} if {tma_flag} else {fallback})"
                checks = [i for i, dim in enumerate(addr.block_dims) if dim.mask]
                bc = f", boundary_check={tuple(checks)}, padding_option='zero'" if checks else ""
                return zeroed_past_ends(f"tl.load({bp}{bc}{evict})", addr.inner_ends)
            extra = atoms[mask_child] if mask_child is not None else (None if extra_mask is None else self.atom(extra_mask))
            offset, mask = self.render_address(addr, atoms, extra, big)
            masked = f", mask={mask}, other=0" if mask else ""
            loaded = f"tl.load({tensor.param} + ({offset}){masked}{evict})"
            if shape and all(d is ONE for d in shape):  # no block dim in the address: a scalar load
                return f"tl.broadcast_to({loaded}, [{', '.join('1' for _ in shape)}])"
            return loaded

        value = self.make(tensor.meta.dtype, shape, render, children, "load")
        value.is_load = True
        return value

    def block_pointer(self, tensor: HostTensor, addr: Address, strategy: str, pieces: int = 1) -> str:
        """A block pointer or tensor descriptor over the access's block; a descriptor for a store
        written in `pieces` covers 1/pieces of the block's last dimension. Leading dims indexed by
        scalars are merged into the first block dim: `k[b, h, tile_n, :]` is a 2-D descriptor over
        k's rows as [B * H * S, D] (block_offsets_of places the tile)."""
        merged = len(addr.row_terms)
        sizes = [self.atom(self.session.tensor_size(tensor, d, self.builder)) for d in addr.tensor_dims]
        if merged:
            sizes[0] = " * ".join(self.atom(self.session.tensor_size(tensor, d, self.builder)) for d in range(merged + 1))
        strides = [self.builder.param(f"{tensor.host_expr}.stride({d})", f"{tensor.param}_stride_{d}") for d in addr.tensor_dims]
        blocks = [d.size_expr for d in addr.block_dims]
        if pieces > 1:
            blocks[-1] = f"{blocks[-1]} // {pieces}"
        if strategy == "tensor_descriptor":
            return f"tl.make_tensor_descriptor({tensor.param}, [{', '.join(sizes)}], [{', '.join(strides)}], [{', '.join(blocks)}])"
        order = tuple(reversed(range(len(sizes))))
        return (
            f"tl.make_block_ptr({tensor.param}, [{', '.join(sizes)}], [{', '.join(strides)}], "
            f"[{', '.join(addr.block_offsets)}], [{', '.join(blocks)}], {order})"
        )

    def block_offsets_of(self, tensor: HostTensor, addr: Address, atoms: list[str]) -> list[str]:
        """A descriptor access's offsets; with merged leading dims, the first is the row of the
        scalar indices' slice plus the tile's offset within it."""
        offsets = list(addr.block_offsets)
        row = None
        for d, (source, _, _, _) in enumerate(addr.row_terms):
            index = atoms[source] if isinstance(source, int) else source
            size = self.atom(self.session.tensor_size(tensor, d, self.builder))
            row = index if row is None else f"({row}) * {size} + {index}"
        if row is not None:
            size = self.atom(self.session.tensor_size(tensor, len(addr.row_terms), self.builder))
            offsets[0] = f"({row}) * {size} + {offsets[0]}"
        return offsets

    def tma_flag(self, tensor: HostTensor, addr: Address, pieces: int = 1, load: bool = False) -> str:
        """A constexpr the launcher computes: may this access use a TMA tensor descriptor? TMA needs
        a 16-byte aligned base and outer strides, a contiguous last dim whose block (or, for a store
        written in `pieces`, whose piece) spans at least 16 bytes, and (`_descriptors_fit`, set by the
        launcher) scratch for every program's descriptors (see module.HELPERS["_descriptor_scratch_fits"]).
        A load's block must also fill whole 128-byte units: a pipelined loop keeps one block per
        stage in shared memory, where a TMA destination must be 128-byte aligned, and Triton 3.6
        packs the stages back to back (a [2, 8] fp32 block, 64 bytes, at 3 loop stages: CUDA's
        "misaligned address" on an H100, scratch/misaligned_probe.py)."""
        self.builder.uses_tensor_descriptors = True
        size = tensor.meta.element_size()
        host = tensor.host_expr
        dims = addr.tensor_dims
        conds = [f"{host}.stride({dims[-1]}) == 1", f"{host}.data_ptr() % 16 == 0"]
        conds += [f"{host}.stride({d}) * {size} % 16 == 0" for d in dims[:-1]]
        merged = len(addr.row_terms)
        if merged:  # the leading dims and the first block dim form one run of rows
            conds += [f"{host}.stride({d}) == {host}.size({d + 1}) * {host}.stride({d + 1})" for d in range(merged)]
            conds.append(f"{' * '.join(f'{host}.size({d})' for d in range(merged + 1))} < 2**31")
        blocks = []
        for dim in addr.block_dims:
            param = self.builder.params.get(dim.size_expr)
            blocks.append(f"({param.host_expr if param is not None else dim.size_expr})")
        last_block = blocks[-1]
        conds.append(f"{last_block} // {pieces} * {size} >= 16" if pieces > 1 else f"{last_block} * {size} >= 16")
        if load:
            conds.append(f"{' * '.join(blocks)} * {size} % 128 == 0")
        conds.append("_descriptors_fit")
        if len(dims) + len(addr.row_terms) != tensor.meta.dim() or len(dims) > 5:
            return "False"
        if addr.row_terms and len(dims) < 2:
            # merged rows as the innermost dim: a slice's start is rarely 16-byte aligned (777 fp32
            # values a slice), and such a load ran into CUDA's illegal instruction (H200,
            # scratch/merged_rows_bisect.py); these accesses keep pointers
            return "False"
        # likewise a tile of the innermost dim must start 16-byte aligned: split-K chunks' tiles at
        # device offsets raised CUDA's illegal instruction on an H100 (tests/dsl/test_matmul.py,
        # 2026-11-27); a device start is not known aligned
        if addr.innermost_begin is None:
            return "False"
        if addr.innermost_begin != "0":
            conds.append(f"({addr.innermost_begin}) * {size} % 16 == 0")
        flag = f"_TMA_{tensor.param}_{len(self.builder.params)}"
        return self.builder.constexpr(flag, "(" + " and ".join(conds) + ")")

    def fit_value(self, value: Any, shape: tuple, node: ast.AST) -> TVal:
        value = self.to_tval(value)
        if same_shape(value.shape, shape):
            return value
        try:
            if len(value.shape) <= len(shape) and same_shape(self.broadcast_shape(value.shape, shape), shape):
                return value
        except exc.ShapeMismatch:
            pass
        squeezed = tuple(d for d in value.shape if d is not ONE)
        if len(squeezed) <= len(shape) and all(any(same_dim(d, t) for t in shape) for d in squeezed):
            target = tuple(next((d for d in squeezed if same_dim(d, t)), ONE) for t in shape)
            reshaped = value if same_shape(target, value.shape) else self.reshape_to(value, target)
            if same_shape(self.broadcast_shape(reshaped.shape, shape), shape):
                return reshaped
        self.require_whole(shape + value.shape, "a store that does not broadcast")  # a whole dim may match
        raise self.error(exc.ShapeMismatch, f"cannot store a value of shape {self.shape_text(value.shape)} into {self.shape_text(shape)}", node)

    def store(self, tensor: HostTensor, index: list, value: Any, extra_mask: Any, node: ast.AST) -> None:
        addr = self.address(tensor, index, node)
        site, position = self.session.memory_site("store", (node, tensor.param))
        strategy = self.session.indexing(site)
        splittable = (addr.block_ok and not addr.inner_ends and extra_mask is None and len(addr.block_dims) == len(addr.shape) >= 2
                      and tensor.meta.dtype != torch.bool)
        pieces = self.session.store_pieces(position, splittable)
        value = self.fit_value(value, addr.shape, node)
        if value.shape and not any(axes for _, axes, _, _ in addr.terms):
            # every dim a unit one that no index spans (`out[i, :]` of a size-1 dim): the pointer is
            # a scalar, and Triton stores no block through it
            value = self.reshape_to(value, ())
        extra = self.to_tval(extra_mask) if extra_mask is not None and not isinstance(extra_mask, bool) else None
        looped = [d for d in addr.shape if isinstance(d, RDim) and d.looped] + value.looped_rdims()
        if extra is not None:
            looped += extra.looped_rdims()
        if looped:
            rdim = looped[0]
            if any(d is not rdim for d in looped):
                raise exc.NotLoopable("a store spans two looped reduction dimensions", self.session.location(node)).with_rdims([d.rdim_id for d in looped])
            with self.chunk_loop(rdim):
                self.emit_write(tensor, addr, value, extra, strategy, pieces)
        else:
            self.emit_write(tensor, addr, value, extra, strategy, pieces)

    def emit_write(self, tensor: HostTensor, addr: Address, value: TVal, extra: TVal | None, strategy: str,
                   pieces: int = 1) -> None:
        atoms = [self.atom(c) for c in addr.children]
        dtype = tensor.meta.dtype
        val = self.atom(value)
        if value.dtype != dtype:
            val = f"{val}.to({tl_dtype(dtype)})"
        if len(value.shape) < len(addr.shape) and value.shape:
            val = self.expand_to(TVal(value.dtype, value.shape, name=val), addr.shape)
        b = self.builder
        # merged leading dims (see block_pointer) take whole tiles only: a partial one would write
        # into the next slice; a tile ending inside the tensor would write past its end
        use_block = (strategy != "pointer" and addr.block_ok and not addr.inner_ends and extra is None and addr.shape
                     and tensor.meta.dtype != torch.bool
                     and (not addr.row_terms or (strategy == "tensor_descriptor" and not addr.block_dims[0].mask)))
        if use_block:
            if value.shape != addr.shape:
                sizes = ", ".join(d.size_expr for d in addr.shape)
                val = f"tl.broadcast_to({val}, [{sizes}])"
            if strategy == "tensor_descriptor":
                b.emit(f"if {self.tma_flag(tensor, addr, pieces)}:")
                with b.block():
                    self.emit_descriptor_store(tensor, addr, val, pieces, atoms)
                b.emit("else:")
                b.depth += 1
                self.emit_pointer_write(tensor, addr, atoms, val, None)
                b.depth -= 1
                return
            checks = [i for i, dim in enumerate(addr.block_dims) if dim.mask]
            bc = f", boundary_check={tuple(checks)}" if checks else ""
            b.emit(f"tl.store({self.block_pointer(tensor, addr, strategy)}, {val}{bc})")
            return
        self.emit_pointer_write(tensor, addr, atoms, val, self.atom(extra) if extra is not None else None)

    def emit_descriptor_store(self, tensor: HostTensor, addr: Address, val: str, pieces: int, atoms: list[str]) -> None:
        """A tensor-descriptor store of the tile `val`; in `pieces` > 1, the tile is halved along its
        last dimension (reshape, move the halves' axis last, tl.split) until there are `pieces`
        parts, each stored at its offset through a descriptor of the part's shape."""
        b = self.builder
        offsets = self.block_offsets_of(tensor, addr, atoms)
        if pieces == 1:
            b.emit(f"{self.block_pointer(tensor, addr, 'tensor_descriptor')}.store([{', '.join(offsets)}], {val})")
            return
        dims = [d.size_expr for d in addr.block_dims]
        rank = len(dims)
        order = ", ".join(str(i) for i in [*range(rank - 1), rank, rank - 1])
        parts, width = [b.assign(val, "tile")], dims[-1]
        while len(parts) < pieces:
            half = f"{width} // 2"
            halves = []
            for part in parts:
                left, right = b.fresh("left"), b.fresh("right")
                shape = ", ".join([*dims[:-1], "2", half])
                b.emit(f"{left}, {right} = tl.split(tl.permute(tl.reshape({part}, [{shape}]), ({order})))")
                halves += [left, right]
            parts, width = halves, half
        descriptor = b.assign(self.block_pointer(tensor, addr, "tensor_descriptor", pieces), "descriptor")
        for i, part in enumerate(parts):
            at = ", ".join([*offsets[:-1], f"{offsets[-1]} + {i} * ({dims[-1]} // {pieces})"])
            b.emit(f"{descriptor}.store([{at}], {part})")

    def emit_pointer_write(self, tensor: HostTensor, addr: Address, atoms: list[str], val: str, extra: str | None) -> None:
        offset, mask = self.render_address(addr, atoms, extra, self.index_width(tensor))
        masked = f", mask={mask}" if mask else ""
        self.builder.emit(f"tl.store({tensor.param} + ({offset}), {val}{masked})")
