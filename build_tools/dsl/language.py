"""The `hl` namespace (Helion's names). Host helpers act during host analysis; device functions are
markers that the device compiler recognises by identity and lowers to Triton."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, TypeVar

from . import exc
from .values import TileVal as Tile  # noqa: F401 - Helion's name for the type of hl.tile's loop variables

T = TypeVar("T")
_host_context: list[Any] = []


class constexpr:  # noqa: N801 - Helion's spelling
    """Annotation marking a kernel argument as compile-time constant (`x: hl.constexpr`)."""


@contextlib.contextmanager
def host_context(context: Any) -> Iterator[None]:
    _host_context.append(context)
    try:
        yield
    finally:
        _host_context.pop()


def _context(name: str) -> Any:
    if not _host_context:
        raise exc.NotSupported(f"hl.{name} may only be called inside a @helion.kernel function")
    return _host_context[-1]


def register_block_size(min_or_max: int, max_or_none: int | None = None) -> int:
    """Declare a tunable block size for a dimension of the given size; returns the config's value."""
    if max_or_none is None:
        return _context("register_block_size").register_block_size(min_or_max)
    return _context("register_block_size").register_block_size(max_or_none, low=min_or_max)


def register_reduction_dim(size: int) -> int:
    return size


def register_tunable(name: str, fragment: Any) -> Any:
    """Declare a user knob; returns its value in the active config."""
    return _context("register_tunable").register_tunable(name, fragment)


def specialize(value: T) -> T:
    """Bake a size into the generated code as a compile-time constant."""
    return _context("specialize").specialize(value)


def _device_only(name: str):
    def marker(*args: Any, **kwargs: Any) -> Any:
        raise exc.NotSupported(f"hl.{name} is only valid inside a hl.tile/hl.grid loop of a kernel")

    marker.__name__ = name
    marker.__qualname__ = name
    return marker


tile = _device_only("tile")
grid = _device_only("grid")
jagged_tile = _device_only("jagged_tile")  # hl.jagged_tile(lengths): tiles up to each lane's length
vtile = jagged_tile  # the name some of Helion's examples use for hl.jagged_tile
zeros = _device_only("zeros")
full = _device_only("full")
load = _device_only("load")
store = _device_only("store")
atomic_add = _device_only("atomic_add")
atomic_and = _device_only("atomic_and")
atomic_or = _device_only("atomic_or")
atomic_xor = _device_only("atomic_xor")
atomic_max = _device_only("atomic_max")
atomic_min = _device_only("atomic_min")
atomic_xchg = _device_only("atomic_xchg")
atomic_cas = _device_only("atomic_cas")  # hl.atomic_cas(t, index, expected, value, sem=)
ATOMIC_OPS = {atomic_add: "atomic_add", atomic_and: "atomic_and", atomic_or: "atomic_or", atomic_xor: "atomic_xor",
              atomic_max: "atomic_max", atomic_min: "atomic_min", atomic_xchg: "atomic_xchg"}
signal = _device_only("signal")
wait = _device_only("wait")
dot = _device_only("dot")
arange = _device_only("arange")
associative_scan = _device_only("associative_scan")
reduce = _device_only("reduce")
cumsum = _device_only("cumsum")
cumprod = _device_only("cumprod")
rand = _device_only("rand")  # Helion's seeded random values: hl.rand(shape, seed), hl.randint(shape, low, high, seed)
randint = _device_only("randint")
device_print = _device_only("device_print")  # hl.device_print(prefix, *values); `print` in device code too
inline_triton = _device_only("inline_triton")  # hl.inline_triton(source, args, output_like): a Triton snippet
triton_kernel = _device_only("triton_kernel")  # hl.triton_kernel(jit_fn, args, output_like): a call of a jit function
subscript = _device_only("subscript")  # hl.subscript(v, [None, slice(None)]): v[None, :]
static_range = _device_only("static_range")  # hl.static_range(end) / (begin, end, step): a loop unrolled at compile time
join = _device_only("join")  # hl.join(a, b): a new last dim of two; hl.split(x) takes it apart
split = _device_only("split")
tile_index = _device_only("tile_index")  # Helion's functional spellings of tile.index, .begin, ...
tile_begin = _device_only("tile_begin")
tile_end = _device_only("tile_end")
tile_block_size = _device_only("tile_block_size")
tile_id = _device_only("tile_id")
TILE_FUNCTIONS = {tile_index: "index", tile_begin: "begin", tile_end: "end", tile_block_size: "block_size", tile_id: "id"}

DEVICE_FUNCTIONS = {tile, grid, jagged_tile, zeros, full, load, store, *ATOMIC_OPS, atomic_cas, signal, wait, dot, arange,
                    rand, randint, associative_scan, reduce, cumsum, cumprod, static_range, subscript, inline_triton,
                    triton_kernel, device_print, join, split, *TILE_FUNCTIONS}


def barrier() -> None:
    """Helion's grid-wide barrier between two top-level loops: every program of the first finishes
    before any of the second starts. Each top-level loop here is a kernel launch of its own, which
    the stream already orders, so the barrier does nothing (and the launcher leaves it out)."""
