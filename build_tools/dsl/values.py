"""Device-side value model: symbolic dimensions, device tensors (eager or lazy) and tiles.

A device tensor's shape is a tuple of Dims and is exactly the shape of the Triton block that holds it.
Values whose shape contains a looped reduction dimension are *lazy*: an expression tree that the emitter
re-materializes inside each chunk loop over that dimension."""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

TL_DTYPES = {
    torch.float32: "tl.float32",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64",
    torch.int8: "tl.int8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
    torch.float8_e4m3fn: "tl.float8e4nv",
    torch.float8_e5m2: "tl.float8e5",
}
# floating types computed, accumulated and multiplied into float32
LOW_PRECISION = (torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)
# float dtypes that Triton's interpreter holds in integer arrays (its negation negates the integers)
BIT_BACKED_FLOATS = (torch.bfloat16,)


DOT_MIN_DIM = 16  # tl.dot needs every operand dim >= 16; smaller whole dims in dots are padded


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype arithmetic on `dtype` values runs in: float32 for low-precision floats, else `dtype`."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def tl_dtype(dtype: torch.dtype) -> str:
    return TL_DTYPES[dtype]


class Dim:
    """One axis of a device tensor."""

    size_expr: str  # Triton expression of the block extent along this axis
    mask: str | None = None  # Triton name of the axis' mask, None when every lane is valid
    numel_expr: str = "1"  # number of valid elements along the axis (for mean)


class OneDim(Dim):
    size_expr = "1"

    def __repr__(self) -> str:
        return "1"


ONE = OneDim()


@dataclass(eq=False)
class BlockDim(Dim):
    """The block of a tile loop dimension (`hl.tile`)."""

    block_id: int
    size_expr: str
    index: str
    mask: str | None
    numel_expr: str
    in_dot: bool = False

    def __repr__(self) -> str:
        return f"block{self.block_id}"


@dataclass(eq=False)
class JaggedDim(BlockDim):
    """The block of an `hl.jagged_tile(lengths)` loop: `lengths` holds one end per lane of enclosing
    tiles (`lanes`, its dims). The loop runs to the longest; `mask` holds below that end, and
    `lane_mask` (dims `lanes` + this one) below each lane's own, which a value holding the lanes'
    dims takes (values.placed_mask)."""

    lanes: tuple = ()
    lane_mask: str = ""

    def __repr__(self) -> str:
        return f"jagged{self.block_id}"


@dataclass(eq=False)
class RDim(Dim):
    """A whole dimension taken at once (`:`, a bounded slice, or a literal size): a reduction dim."""

    rdim_id: int
    size_value: int  # size at bind time
    size_param: str  # Triton expression of the true size
    looped: bool
    chunk: int | None
    needs_mask: bool
    in_dot: bool = False

    @property
    def size_expr(self) -> str:  # type: ignore[override]
        return f"_REDUCTION_BLOCK_{self.rdim_id}" if self.looped else f"_RDIM_SIZE_{self.rdim_id}"

    @property
    def index(self) -> str:
        return f"rindex_{self.rdim_id}"

    @property
    def mask(self) -> str | None:  # type: ignore[override]
        return f"rmask_{self.rdim_id}" if self.needs_mask else None

    @property
    def numel_expr(self) -> str:  # type: ignore[override]
        return self.size_param

    def __repr__(self) -> str:
        return f"rdim{self.rdim_id}"


@dataclass(eq=False)
class MergedDim(Dim):
    """Adjacent dims viewed as one (`reshape` of a [tile, 2] value as [2 * tile], or a size such as
    `tile.block_size * 2`): its extent is the product of its parts' and its elements run through
    them in row-major order. `index` counts its positions from 0; `mask` holds where every part's
    mask holds. Its parts are blocks (of tiles or of a fixed size) or whole dims of a power-of-two
    size, so the extent is the Triton block's."""

    parts: tuple
    size_expr: str
    index: str
    size_value: int  # extent at bind time
    mask: str | None = None

    @property
    def numel_expr(self) -> str:  # type: ignore[override]
        return self.size_expr

    def __repr__(self) -> str:
        return "*".join(repr(p) for p in self.parts)


@dataclass(eq=False)
class PartDim(Dim):
    """One of the adjacent dims a dim is split into (`reshape` of a [tile] value as [tile / 2, 2], a
    size such as `tile.block_size // 2`). `key` is its extent_key: the tunable block it takes a
    power-of-two fraction of, or a constant. Where the split dim had a mask, `pieces` are all the
    dims of that split, `whole` the split dim and `joint` the mask over the pieces (their shape),
    and `mask` holds where some element of the split along this dim is valid (a projection of
    `joint`)."""

    key: tuple
    size_expr: str
    index: str
    size_value: int  # extent at bind time
    mask: str | None = None
    joint: str | None = None
    pieces: tuple = ()
    whole: Any = None  # the split dim, where `pieces` are set

    @property
    def numel_expr(self) -> str:  # type: ignore[override]
        return self.size_expr

    def __repr__(self) -> str:
        ids, factor = self.key
        return "*".join([f"block{i}" for i in ids] + ([] if factor == 1 and ids else [str(factor)]))


def fixed_dim(size: int) -> BlockDim:
    """A dim of a constant power-of-two size: the new axis of `torch.stack`, a size's factor."""
    return BlockDim(-1, str(size), f"tl.arange(0, {size})", None, str(size))


@dataclass(eq=False)
class TVal:
    """A device tensor or scalar. `name` is set for eager values; `render`/`children` for lazy ones."""

    dtype: torch.dtype
    shape: tuple
    name: str | None = None
    render: Callable[[list[str]], str] | None = None
    children: list = field(default_factory=list)
    is_load: bool = False
    finite_fill: bool = False  # a tile of one finite constant (hl.full): no garbage past its bounds
    extra: Any = None
    at_least: int | None = None  # a known lower bound of an integer value (an index's, a size's 0)

    def __post_init__(self) -> None:
        seen = TENSOR_SHAPES_SEEN.get()
        if seen is not None:
            seen.add(shape_key(self.shape))

    @property
    def lazy(self) -> bool:
        return self.name is None

    def looped_rdims(self) -> list[RDim]:
        return [d for d in self.shape if isinstance(d, RDim) and d.looped]


# While a session compiles, the set that collects `shape_key` of every device tensor it creates: the
# block-volume and warp caps size a program by its largest tensor.
TENSOR_SHAPES_SEEN: ContextVar[set | None] = ContextVar("TENSOR_SHAPES_SEEN", default=None)


def shape_key(shape: tuple) -> tuple:
    """A device tensor's dims as config-independent keys: ("block", id), ("rdim", id) or ("fixed", n)."""
    key = []
    for dim in shape:
        if isinstance(dim, PartDim):  # its blocks, and its factor (a fraction of a block counts as such)
            key.extend([("block", i) for i in dim.key[0]] + [("fixed", dim.key[1])])
        elif isinstance(dim, MergedDim):
            key.extend(shape_key(dim.parts))
        elif isinstance(dim, BlockDim):
            key.append(("block", dim.block_id) if dim.block_id >= 0 else
                       ("fixed", int(dim.size_expr) if str(dim.size_expr).isdigit() else 1))
        elif isinstance(dim, RDim):
            key.append(("rdim", dim.rdim_id))
    return tuple(sorted(key))


@dataclass(eq=False)
class TileVal:
    """The loop variable of `hl.tile`: a block of indices along one dimension."""

    dim: BlockDim
    offset: str  # Triton scalar: first index of this tile
    end: str  # Triton scalar: exclusive end of the iteration space
    begin: str  # Triton scalar: start of the iteration space
    end_value: int | None = None  # bind-time end of the iteration space, when known on the host
    end_host: str | None = None  # launcher-side expression of `end_value`
    begin_host: str | None = None  # launcher-side expression of `begin`; None when a device value
    at_least: int | None = 0  # a known lower bound of its indices: its loop's begin's


@dataclass(eq=False)
class HostTensor:
    """A tensor living in host code, passed to the kernel as a pointer."""

    param: str
    meta: torch.Tensor
    host_expr: str


class BlockSizeInt(int):
    """The value of `hl.register_block_size`: an int that remembers its block id."""

    block_id: int

    def __new__(cls, value: int, block_id: int) -> "BlockSizeInt":
        obj = super().__new__(cls, value)
        obj.block_id = block_id
        return obj


@dataclass(eq=False)
class HostScalar:
    """A host-evaluated scalar used in device code: a kernel argument, or a literal when constant."""

    expr: str  # kernel-side text: a parameter name
    value: Any  # value at bind time
    dtype: torch.dtype
    host: str = ""  # launcher-side expression
    at_least: int | None = None  # 0 when >= 0 on every call (a size, what +, *, // compute of sizes)


@dataclass(eq=False)
class DimSize(HostScalar):
    """`value.size(i)` of a device value: its extent along a dim (a block's constexpr, a whole dim's
    size) as a scalar, which as a size names that dim again (`v.view(v.size(0), 1)`)."""

    dim: Any = None
    at_least: int | None = 0


@dataclass(eq=False)
class DeviceSlice:
    """A slice written `start:start + length` whose start is known only on the device (a tile's
    begin times 2): `length` (a host integer or a size such as `tile.block_size * 2`) gives its dim."""

    start: Any
    length: Any


def size_arguments(sizes: tuple) -> tuple:
    """The sizes of a call that takes them spread out or as one sequence (`view(a, b)`, `view([a, b])`)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        return tuple(sizes[0])
    return sizes


def scalar_dtype(value: Any) -> torch.dtype:
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return torch.int32 if -(2**31) <= value < 2**31 else torch.int64
    return torch.float32


def place(name: str, positions: list[int], rank: int) -> str:
    """Index expression that places a value whose axes are `positions` of a rank-`rank` block."""
    if rank == 0 or (len(positions) == rank and positions == list(range(rank))):
        return name
    if not positions:
        return name
    parts = [":" if axis in positions else "None" for axis in range(rank)]
    return f"{name}[{', '.join(parts)}]"


def extent_key(dim: Any) -> tuple | None:
    """What a dim's extent is made of, when the compile knows it: the tunable block sizes it
    multiplies (sorted ids) and a constant factor (a Fraction below 1 for a part of a block); None
    for a dim of a run-time or chunked size."""
    if isinstance(dim, PartDim):
        return dim.key
    if isinstance(dim, MergedDim):
        return product_key(dim.parts)
    if isinstance(dim, BlockDim):
        if dim.block_id >= 0:
            return (dim.block_id,), 1
        return ((), int(dim.size_expr)) if str(dim.size_expr).isdigit() else None
    if isinstance(dim, RDim) and not dim.looped and dim.size_param.isdigit():
        return (), dim.size_value
    return None


def product_key(dims: Any) -> tuple | None:
    """The extent_key of adjacent `dims` merged into one; None when one of them has none."""
    ids: list = []
    factor = 1
    for dim in dims:
        key = extent_key(dim)
        if key is None:
            return None
        ids.extend(key[0])
        factor *= key[1]
    return tuple(sorted(ids)), factor


def same_dim(a: Dim, b: Dim) -> bool:
    """Dims are equal when they are one object, or their extents are made of the same tunable block
    sizes and constants (two tiles of one block size, a fixed block and a whole dim of its size)."""
    if a is b:
        return True
    key = extent_key(a)
    return key is not None and key == extent_key(b)


def placed_mask(shape: tuple, axis: int) -> str | None:
    """The mask of `shape[axis]` as an expression of the rank of `shape`: a jagged dim's lane mask
    where the value holds its lanes' dims (before it, in order), else the dim's own mask."""
    dim = shape[axis]
    if dim is ONE or dim.mask is None:
        return None
    axis %= len(shape)
    if isinstance(dim, PartDim) and dim.joint is not None:
        axes = [next((i for i, d in enumerate(shape) if d is piece), None) for piece in dim.pieces]
        if None not in axes and axes == list(range(axes[0], axes[0] + len(axes))):
            return place(dim.joint, axes, len(shape))
    if isinstance(dim, JaggedDim):
        lanes = [next((i for i, d in enumerate(shape) if d is not ONE and same_dim(d, lane)), None) for lane in dim.lanes]
        if None not in lanes and lanes + [axis] == sorted(set(lanes + [axis])):
            return place(dim.lane_mask, lanes + [axis], len(shape))
    return place(dim.mask, [axis], len(shape))


def same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))
