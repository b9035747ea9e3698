"""CompileSession: compiles one kernel function for one Config (or discovers its config space).

It runs host statements on meta tensors in source order, hands each top-level device loop to a
DeviceCompiler, records every tunable knob it meets (block sizes, reduction dims, memory sites,
device loops), and assembles the launcher that replays the host code and launches the kernels."""
from __future__ import annotations

import ast
import builtins
import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
import triton

from . import exc
from . import language as hl
from . import nested
from .config import GLUON_FLAGS, Config
from .device import DeviceCompiler
from .emitter import KernelBuilder, compile_options_text, split_helpers
from .host import HOST_TENSOR_METHODS, DeviceReads, LauncherRewriter, ParsedKernel, find_device_calls, host_statement_code
from .sizes import SizeTracker
from .values import (DOT_MIN_DIM, TENSOR_SHAPES_SEEN, BlockDim, BlockSizeInt, HostScalar, HostTensor, MergedDim, RDim, TileVal,
                     scalar_dtype)

DISCOVERY_BLOCK = 16
SCHEDULER_LANE = 1  # the `_counters` lane of pid_type "persistent_dynamic"'s tile tickets


@dataclass
class BlockInfo:
    size: int
    device_loop: bool = False
    in_dot: bool = False
    registered: bool = False
    low: int = 1  # lower bound given to hl.register_block_size(min, max)
    high: int | None = None  # upper bound given to hl.register_block_size(min, max)


@dataclass
class DeviceLoopInfo:
    has_dot: bool
    # A runtime `if` somewhere in the body. Such loops are never unrolled: Triton 3.6's loop unroller
    # leaves the remainder iteration's branch with a constant condition, and TritonGPUCoalesce
    # asserts on memory accesses inside the branch that constant propagation proves dead.
    has_branch: bool = False
    # A loop over one tile dimension whose end is not provably a multiple of its block: its last
    # partial tile can be peeled into a second loop, so the main loop needs no tail mask.
    peelable: bool = False
    # A dot in the body reads a constant tile (hl.full) as an operand. Triton 3.6's automatic warp
    # specialization crashes on such a loop (NVGPUWarpSpecialization, 2026-12-02), so it is not offered.
    constant_operand: bool = False
    # A load, store or atomic in the body (or a loop inside it). Triton 3.6's
    # TritonGPUFuseNestedLoops crashes (an MLIR assertion) on a flattened loop holding a loop
    # without one (a count: `count = count + 1.0`), so such kernels are not flattened.
    memory_access: bool = False


@dataclass
class Discovery:
    """What a compile found: the shape of the config space."""

    blocks: list = field(default_factory=list)
    rdims: list = field(default_factory=list)  # sizes
    rdim_dot: set = field(default_factory=set)
    loads: int = 0
    stores: int = 0
    top_loops: list = field(default_factory=list)  # number of dims per top-level loop
    device_loops: list = field(default_factory=list)  # DeviceLoopInfo per device loop
    tunables: dict = field(default_factory=dict)
    specialized: list = field(default_factory=list)
    # (top-level loop index, host expression, guard): run-time host values that a kernel needed as
    # compile-time constants (see CompileSession.bake); their values are in `specialized`, or in
    # `guards` for size equalities (no part of the specialization's JSON identity)
    baked: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    not_loopable: set = field(default_factory=set)
    flatten_count: int = 0  # loops with more than one dimension (top-level or device)
    # stores (by their index among the stores) of a tile with two or more block dimensions: the
    # ones a tensor-descriptor store may write in pieces along its last dimension (store_subtiles)
    splittable_stores: set = field(default_factory=set)
    store_sites: list = field(default_factory=list)  # each store's index in `indexing`
    # the top-level loop (kernel) of each `indexing` site and of each device loop: a config with a
    # back end per kernel gives a Gluon kernel's Triton-only knobs their neutral values
    site_kernels: list = field(default_factory=list)
    device_loop_kernels: list = field(default_factory=list)
    # top-level loops whose programs wait for each other: their tiles keep launch order
    # (tile_reversals), since a program may wait for one that a reversed order would launch later
    waiting_loops: set = field(default_factory=set)
    # top-level loops with a device loop inside a run-time `if`: flattened (persistent_flattens),
    # their device loops are not unrolled. Triton 3.6's TritonGPUFuseNestedLoops builds an invalid
    # scf.if where such a branch follows an unrolled loop of a constant trip count (found by
    # cross-compiling the corpus, 2026-12-07); flattened without unrolling, they compile.
    branched_loops: set = field(default_factory=set)
    # shape_key of every device tensor the compile created (values.TENSOR_SHAPES_SEEN)
    tensor_shapes: set = field(default_factory=set)
    # shape_key of every matrix product's result (the warp cap keeps 8x16 outputs per warp)
    dot_shapes: set = field(default_factory=set)
    # a reduction dim's extent is a run-time size (static_reduction_sizes may make it a constexpr)
    runtime_rdims: bool = False
    # a run-time host condition reaches device code (constexpr_conditions may make it a constexpr)
    runtime_conditions: bool = False
    # per top-level loop, the block index of its row tile when the Gluon back end can lower its
    # kernel (the loop form of gluon_lowering over float16/bfloat16 tensors), else None
    gluon_rows: list = field(default_factory=list)

    def memoryless_loop_kernels(self) -> set:
        """The top-level loops holding a device loop without a memory access: never flattened
        (DeviceLoopInfo.memory_access)."""
        return {kernel for loop, kernel in zip(self.device_loops, self.device_loop_kernels) if not loop.memory_access}


@dataclass
class KernelLaunch:
    name: str
    source: str
    builder: KernelBuilder
    grid: str
    helpers: set  # keys of module.HELPERS that the launcher calls


def _product(counts: list[str]) -> str:
    """The expression of a grid's program count: the product of its dims' counts."""
    return " * ".join(f"({c})" for c in counts)


@functools.lru_cache(maxsize=256)
def gluon_form(kernel: str) -> tuple[int, frozenset] | None:
    """(row block, TMA operand tensors) of the Gluon back end's lowering of a rendered Triton
    kernel (its text without helpers); None where the analysis refuses it. Analysed once per text:
    discovery renders the same kernel at each bound shape and tunable value."""
    from .gluon_lowering import Lowering

    try:
        lowering = Lowering(kernel, 1)
        return int(lowering.rows.removeprefix("_BLOCK_SIZE_")), frozenset(site.tensor for site in lowering.sites())
    except Exception:  # noqa: BLE001 - refused (NotLowerable, NotSupported) or unreadable by the analysis
        return None


class CompileSession:
    def __init__(self, parsed: ParsedKernel, args: dict, config: Config, static_shapes: bool, force_persistent: set,
                 discovering: bool = False):
        self.parsed = parsed
        self.discovering = discovering  # a discovery compile: it records what the config space offers
        self.config = config
        self.static_shapes = static_shapes
        self.force_persistent = force_persistent
        self.globals = parsed.globals
        self.env: dict[str, Any] = {}
        self.launcher_lines: list[str] = []
        self.nested_args: dict[str, str] = {}  # NestedTensor argument -> the launcher's view of it
        for name, value in args.items():
            if nested.is_nested(value):  # the launcher views it first, as host analysis sees it
                self.env[name] = nested.meta_argument(value)
                self.nested_args[name] = nested.launcher_name(name)
                self.launcher_lines.append(f"{self.nested_args[name]} = {nested.HELPER}({name})")
            else:
                self.env[name] = value.to("meta") if isinstance(value, torch.Tensor) else value
        self.found = Discovery()
        # (kind, access) -> (position in `indexing`, position among that kind's accesses): see memory_site
        self.memory_sites: dict[tuple, tuple[int, int]] = {}
        self.static_names = set(parsed.constexpr_params) | {n for n, v in args.items() if isinstance(v, bool) or v is None}
        self.runtime_scalars = {
            n for n, v in args.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and n not in parsed.constexpr_params
        }
        # host tensors whose sizes follow run-time scalars (allocated from them): sized at run time
        # even under static shapes
        self.runtime_sized: set[str] = set()
        # host names bound only to compile-time values (tunables, block sizes, constexprs and what is
        # computed from them alone): conditions on them pick the kernel's structure (is_compile_time)
        self.compile_time_names: set[str] = set()
        self.replay: list[Any] = []
        self.kernels: list[KernelLaunch] = []
        self.rdim_by_size: dict[int, int] = {}
        self.top_loop_index = 0
        self.tile_draw = None  # a "persistent_dynamic" loop's (ticket, counter, tile count) until pid_finish
        self.device_loop_index = 0
        self.rdim_objects: list[RDim] = []
        self.rdim_host: dict[int, tuple[str, bool]] = {}
        self.sizes = SizeTracker(lambda node: self.try_eval(node, self.env), self.is_compile_time)
        self.location_file: str | None = None  # the file of the inlined function being compiled

    # ------------------------------------------------------------------ locations
    def location(self, node: ast.AST | None) -> str:
        return self.location_at(node, self.location_file)

    def location_at(self, node: ast.AST | None, filename: str | None) -> str:
        """`file:line` of `node` in `filename` (None: the kernel's file; an inlined function's
        nodes are in its own, DeviceCompiler.inline_call)."""
        line = getattr(node, "lineno", None) or self.parsed.tree.lineno
        return f"{filename or self.parsed.filename}:{line}"

    # ------------------------------------------------------------------ config lookups
    def knob(self, name: str, index: int | None, default: Any) -> Any:
        value = self.config.get(name) if name in self.config else None
        if value is None:
            return default
        if index is None:
            return value
        if isinstance(value, (list, tuple)):
            return value[index] if index < len(value) and value[index] is not None else default
        return value

    def block_value(self, block_id: int) -> int:
        return int(self.knob("block_sizes", block_id, DISCOVERY_BLOCK))

    # ------------------------------------------------------------------ host-time hl helpers
    def register_block_size(self, size: Any, low: int | None = None) -> int:
        block_id = len(self.found.blocks)
        info = BlockInfo(int(size), registered=True)
        if low is not None:
            info.low, info.high = max(1, int(low)), int(size)
        self.found.blocks.append(info)
        value = BlockSizeInt(self.block_value(block_id), block_id)
        self.replay.append(value)
        return value

    def register_tunable(self, name: str, fragment: Any) -> Any:
        self.found.tunables[name] = fragment
        value = self.config.get(name, fragment.default()) if name in self.config else fragment.default()
        self.replay.append(value)
        return value

    def specialize(self, value: Any) -> Any:
        if isinstance(value, (tuple, list, torch.Size)):
            self.found.specialized.extend(int(v) for v in value)
        else:
            self.found.specialized.append(int(value))
        return value

    # ------------------------------------------------------------------ host evaluation
    def eval_host(self, node: ast.AST) -> Any:
        code = compile(ast.Expression(body=node), self.parsed.filename, "eval")
        try:
            return eval(code, self.globals, self.env)
        except exc.Base:
            raise
        except Exception as err:
            raise exc.NotSupported(f"host expression {ast.unparse(node)!r} failed: {err}", self.location(node)) from None

    def try_eval(self, node: ast.AST, env: dict, replay: bool = False) -> Any:
        if replay:
            return self.replay_queue.pop(0)
        try:
            return eval(compile(ast.Expression(body=node), "<dsl>", "eval"), self.globals, env)
        except Exception:
            return None

    def is_host_evaluable(self, node: ast.AST, scope: dict) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            if node.id in scope:
                return False
            return node.id in self.env or node.id in self.globals or hasattr(builtins, node.id)
        if isinstance(node, ast.Attribute):
            return self.is_host_evaluable(node.value, scope)
        if isinstance(node, ast.Subscript):
            if not (self.is_host_evaluable(node.value, scope) and self.is_host_evaluable(node.slice, scope)):
                return False
            return not isinstance(self.try_eval(node.value, self.env), torch.Tensor)
        if isinstance(node, ast.Call):
            if not all(self.is_host_evaluable(a, scope) for a in node.args):
                return False
            if not all(self.is_host_evaluable(k.value, scope) for k in node.keywords):
                return False
            if not self.is_host_evaluable(node.func, scope):
                return False
            return self.host_callable(node.func)
        if isinstance(node, (ast.BinOp,)):
            return self.is_host_evaluable(node.left, scope) and self.is_host_evaluable(node.right, scope)
        if isinstance(node, ast.UnaryOp):
            return self.is_host_evaluable(node.operand, scope)
        if isinstance(node, ast.Compare):
            return all(self.is_host_evaluable(n, scope) for n in [node.left, *node.comparators])
        if isinstance(node, ast.BoolOp):
            return all(self.is_host_evaluable(n, scope) for n in node.values)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.is_host_evaluable(n, scope) for n in node.elts)
        if isinstance(node, ast.Slice):
            return all(p is None or self.is_host_evaluable(p, scope) for p in (node.lower, node.upper, node.step))
        if isinstance(node, ast.IfExp):
            return all(self.is_host_evaluable(n, scope) for n in (node.test, node.body, node.orelse))
        return False

    def host_callable(self, func: ast.AST) -> bool:
        callee = self.try_eval(func, self.env)
        if callee is None or callee in hl.DEVICE_FUNCTIONS:
            return False
        if getattr(callee, "__self__", None) is not None and isinstance(callee.__self__, torch.Tensor):
            return callee.__name__ in HOST_TENSOR_METHODS
        if getattr(callee, "__module__", None) == "math" or callee in (min, max, int, float, len, abs, bool, round, slice):
            return True
        return getattr(callee, "__name__", "") in ("cdiv", "next_power_of_2") or callee is torch.Size

    @property
    def runtime_names(self) -> set:
        """Host names whose values follow the call beyond its tensors' shapes: run-time scalars and
        the tensors sized from them."""
        return self.runtime_scalars | self.runtime_sized

    def names_in(self, node: ast.AST) -> list[str]:
        return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]

    def is_static_node(self, node: ast.AST) -> bool:
        """True when the host expression's value is fixed for this specialization. Scalar arguments
        (and host values computed from them, and the sizes of tensors allocated from them) are
        run-time values even under static shapes."""
        if self.runtime_names.intersection(self.names_in(node)):
            return False
        if self.static_shapes:
            return True
        for name in self.names_in(node):
            if name in self.static_names or name not in self.env:
                continue
            value = self.env[name]
            if isinstance(value, (int, float)) and not isinstance(value, (bool, BlockSizeInt)):
                return False
        return not self.reads_tensor_sizes(node)

    def reads_tensor_sizes(self, node: ast.AST) -> bool:
        """Whether a host expression calls `size`, `stride` or `numel`, or reads `.shape`."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and getattr(self.try_eval(sub.func, self.env), "__name__", "") in ("size", "stride", "numel"):
                return True
            if isinstance(sub, ast.Attribute) and sub.attr == "shape":
                return True
        return False

    def is_compile_time(self, node: ast.AST) -> bool:
        """True when a host expression's value is the same on every call this kernel serves: it reads
        no run-time scalar, no tensor size, stride or shape, and no name bound to a number (or a
        tuple of them) computed from one. Unlike is_static_node, numbers computed from tunables
        and block sizes count, so that a condition on them picks a structure at compile time,
        while one on a size (`programs == 1` where programs follows M) branches at run time."""
        names = self.names_in(node)
        if self.runtime_names.intersection(names):
            return False
        if self.static_shapes:
            return True
        for name in names:
            if name in self.static_names or name in self.compile_time_names or name not in self.env:
                continue
            value = self.env[name]
            if isinstance(value, (bool, int, float, tuple, list)) and not isinstance(value, BlockSizeInt):
                return False
        return not self.reads_tensor_sizes(node)

    def is_static_condition(self, node: ast.AST, scope: dict) -> bool:
        return self.is_host_evaluable(node, scope) and self.is_compile_time(node)

    def host_value(self, node: ast.AST, builder: KernelBuilder) -> Any:
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.host_value(elt, builder) for elt in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        value = self.eval_host(node)
        text = ast.unparse(node)
        static = self.is_compile_time(node) if isinstance(value, bool) else self.is_static_node(node)
        return self.wrap_host(value, text, builder, static)

    def host_name(self, name: str, builder: KernelBuilder) -> Any:
        if name in self.env:
            static = name in self.static_names or (self.static_shapes and name not in self.runtime_scalars)
            if isinstance(self.env[name], bool):
                static = self.is_compile_time(ast.Name(name, ast.Load()))
            return self.wrap_host(self.env[name], name, builder, static)
        if name in self.globals:
            value = self.globals[name]
            if isinstance(value, torch.Tensor):
                raise exc.NotSupported(f"global tensor {name!r} used in device code; pass it as an argument")
            return value
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise exc.NotSupported(f"undefined name {name!r} in device code")

    def wrap_host(self, value: Any, text: str, builder: KernelBuilder, static: bool) -> Any:
        if isinstance(value, torch.Tensor):
            hint = text if text.isidentifier() else "tensor"
            return HostTensor(builder.param(text, hint), value, text)
        if isinstance(value, (list, tuple)) and not static:
            # a run-time sequence (`x.size()`, a list held in a name): each element stays run-time
            return tuple(self.wrap_host(v, f"({text})[{i}]", builder, False) for i, v in enumerate(value))
        if isinstance(value, bool) and not static:
            # a run-time condition (`programs == 1` of a dynamic size): a flag the launcher computes
            # per call (an integer expression, no call, so the launcher stays replayable), so that
            # the kernel follows each call's value instead of the example's; an argument, or with
            # `constexpr_conditions` a constexpr (one Triton compile per value taken)
            self.found.runtime_conditions = True
            return self.host_scalar(f"(1 if {text} else 0)", int(value), builder,
                                    constexpr=bool(self.config.get("constexpr_conditions")))
        if isinstance(value, BlockSizeInt) or isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            if static:
                return value
            return self.host_scalar(text, value, builder)
        if isinstance(value, float):
            if static:
                return value
            return self.host_scalar(text, value, builder)
        return value

    def host_scalar(self, text: str, value: Any, builder: KernelBuilder, constexpr: bool = False) -> HostScalar:
        at_least = 0 if self.sizes.is_non_negative(ast.parse(text, mode="eval").body) else None
        return HostScalar(builder.param(text, text, constexpr=constexpr), value, scalar_dtype(value), host=text,
                          at_least=at_least)

    def bake(self, host_expr: str, value: Any, guard: bool = False) -> Any:
        """A run-time host value used where Triton needs a compile-time constant (a block size; with
        `guard`, the equality of two sizes that share one dimension): the kernel is compiled for
        `value`, and the expression joins the bound kernel's specialization, so a call where it
        evaluates to something else binds (and compiles) a kernel of its own."""
        entry = (self.top_loop_index, host_expr, guard)
        if entry in self.found.baked:
            return value
        self.found.baked.append(entry)
        (self.found.guards if guard else self.found.specialized).append(value)
        return value

    def host_expr(self, value: HostScalar) -> str:
        return value.host

    def static_or_specialized(self, value: Any) -> bool:
        return self.static_shapes

    def is_specialized_size(self, size_value: int) -> bool:
        """Whether a whole-dimension size equal to `size_value` is a compile-time constant: a tensor
        size of that value went through hl.specialize (so it is part of the bound kernel's key).
        Whole dims are unified by value (one RDim per size), so every `:` over them shares it."""
        return size_value in self.sizes.specialized

    def size_host_expr(self, tensor: HostTensor, d: int) -> str:
        """Launcher-side text of a tensor size (a literal when it is a compile-time constant)."""
        size = tensor.meta.size(d)
        if tensor.host_expr not in self.runtime_sized and (self.static_shapes or self.is_specialized_size(size)):
            return str(size)
        return f"{tensor.host_expr}.size({d})"

    def static_sizes(self, tensor: HostTensor) -> bool:
        """Whether `tensor`'s sizes are compile-time constants: static shapes, and not allocated
        from a run-time scalar."""
        return self.static_shapes and tensor.host_expr not in self.runtime_sized

    def tensor_size(self, tensor: HostTensor, d: int, builder: KernelBuilder) -> Any:
        size = tensor.meta.size(d)
        if self.static_sizes(tensor):
            return size
        return self.host_scalar(f"{tensor.host_expr}.size({d})", size, builder)

    def tile_extent(self, tile: TileVal) -> int | None:
        return tile.end_value

    # ------------------------------------------------------------------ knobs met while compiling
    def block_for(self, spec: Any, size_value: int, device_loop: bool) -> tuple[int, int | None]:
        if isinstance(spec, HostScalar) and isinstance(spec.value, int):
            spec = self.bake(spec.host, spec.value)
        if isinstance(spec, BlockSizeInt):
            info = self.found.blocks[spec.block_id]
            info.device_loop = info.device_loop or device_loop
            return spec.block_id, None
        if isinstance(spec, int) and not isinstance(spec, bool):
            return -1, int(spec)
        if spec is not None:
            raise exc.TypeMismatch(f"block_size must be an int or hl.register_block_size value, got {type(spec).__name__}")
        block_id = len(self.found.blocks)
        self.found.blocks.append(BlockInfo(size_value, device_loop=device_loop))
        return block_id, None

    def note_dot_dim(self, dim: Any) -> None:
        if isinstance(dim, MergedDim):  # its blocks need a dot's sizes; its whole dims are not padded
            for part in dim.parts:
                if isinstance(part, BlockDim):
                    self.note_dot_dim(part)
        elif isinstance(dim, BlockDim) and dim.block_id >= 0:
            self.found.blocks[dim.block_id].in_dot = True
        elif isinstance(dim, RDim):
            dim.in_dot = True
            self.found.rdim_dot.add(dim.rdim_id)

    def rdim(self, size_value: int) -> tuple[int, int | None]:
        if size_value not in self.rdim_by_size:
            self.rdim_by_size[size_value] = len(self.found.rdims)
            self.found.rdims.append(size_value)
        rdim_id = self.rdim_by_size[size_value]
        chunk = None if rdim_id in self.force_persistent else self.knob("reduction_loops", rdim_id, None)
        # a chunk of the dim's padded width loops once (later passes re-load rather than hold the
        # dim in registers: config_spec.reduction_range); a wider one (normalized against another
        # structure's dims) holds the dim
        if chunk is not None and chunk >= size_value and chunk != triton.next_power_of_2(size_value):
            chunk = None
        return rdim_id, chunk

    def note_rdim_expr(self, rdim: RDim, host_expr: str, static: bool) -> None:
        self.rdim_objects.append(rdim)
        self.rdim_host[id(rdim)] = (host_expr, static)
        self.found.runtime_rdims |= not static

    def memory_site(self, kind: str, access: tuple) -> tuple[int, int]:
        """The positions of a load or store ("load"/"store") in `indexing` and among its kind's
        accesses (`load_eviction_policies` / `store_subtiles`), given at the first emission of
        `access` (its source node and tensor) in the order accesses are first emitted.
        A structure that emits one access more than once (a peeled loop's tail, the two copies of a
        warp-specialized loop, a looped reduction's second pass, a prefetched first tile) gives
        every copy the access's knobs (`indexing`, `load_eviction_policies`, `store_subtiles`), so
        the positions of later accesses do not depend on such structures."""
        known = self.memory_sites.get((kind, access))
        if known is None:
            if kind == "load":
                self.found.loads += 1
                known = (self.found.loads + self.found.stores - 1, self.found.loads - 1)
            else:
                self.found.stores += 1
                known = (self.found.loads + self.found.stores - 1, self.found.stores - 1)
                self.found.store_sites.append(known[0])
            self.found.site_kernels.append(self.top_loop_index)
            self.memory_sites[(kind, access)] = known
        return known

    def store_pieces(self, store: int, splittable: bool) -> int:
        """Into how many pieces along its last dimension store `store` (its position among the
        stores) writes its tile (store_subtiles; 1 unless the store is `splittable`)."""
        if not splittable:
            return 1
        self.found.splittable_stores.add(store)
        return int(self.knob("store_subtiles", store, 1))

    def indexing(self, site: int) -> str:
        value = self.config.get("indexing", "pointer") if "indexing" in self.config else "pointer"
        if isinstance(value, (list, tuple)):
            value = value[site] if site < len(value) else "pointer"
        return value or "pointer"

    def eviction(self, load: int) -> str:
        """The eviction policy of load `load` (its position among the loads)."""
        value = self.knob("load_eviction_policies", load, "")
        return {"first": "evict_first", "last": "evict_last"}.get(value, value or "")  # "reread": see memory.load

    def next_device_loop(self, has_dot: bool, in_branch: bool) -> int:
        self.found.device_loops.append(DeviceLoopInfo(has_dot))
        self.found.device_loop_kernels.append(self.top_loop_index)
        if in_branch:
            self.found.branched_loops.add(self.top_loop_index)
        index = self.device_loop_index
        self.device_loop_index += 1
        return index

    def note_constant_operand(self, loop_indices: list[int]) -> None:
        """A dot inside these device loops reads a constant tile."""
        for index in loop_indices:
            self.found.device_loops[index].constant_operand = True

    def note_memory_access(self, loop_indices: list[int]) -> None:
        """A load, store or atomic was emitted inside these device loops."""
        for index in loop_indices:
            self.found.device_loops[index].memory_access = True

    def note_branch(self, loop_indices: list[int]) -> None:
        """A runtime `if` was emitted inside these device loops."""
        for index in loop_indices:
            self.found.device_loops[index].has_branch = True

    def flatten(self, ndims: int) -> bool:
        """Whether this multi-dimensional loop is flattened (consumes one flatten_loops entry)."""
        if ndims <= 1:
            return False
        index = self.found.flatten_count
        self.found.flatten_count += 1
        return bool(self.knob("flatten_loops", index, False))

    def unroll_factor(self, index: int) -> int:
        """The loop_unroll_factor of device loop `index` (0: left to Triton)."""
        return int(self.knob("range_unroll_factors", index, 0) or 0)

    def mark_peelable(self, index: int) -> None:
        self.found.device_loops[index].peelable = True

    def peel_tail(self, index: int) -> bool:
        """Whether device loop `index` (a peelable one) runs its full tiles unmasked and its last
        partial tile in a second loop (range_peel_tails)."""
        return bool(self.knob("range_peel_tails", index, False))

    def warp_specialize_flag(self, index: int) -> str | None:
        """The launcher constexpr that device loop `index` takes as `warp_specialize`
        (DeviceCompiler.define_warp_specialize), or None when its knob is off."""
        return f"_WARP_SPECIALIZE_{index}" if self.knob("range_warp_specializes", index, None) else None

    def range_options(self, index: int) -> str:
        opts = []
        unroll = self.unroll_factor(index)
        if unroll:
            opts.append(f"loop_unroll_factor={unroll}")
        stages = self.knob("range_num_stages", index, 0)
        if stages:
            opts.append(f"num_stages={int(stages)}")
        flag = self.warp_specialize_flag(index)
        if flag:
            opts.append(f"warp_specialize={flag}")
        return "".join(", " + o for o in opts)

    # ------------------------------------------------------------------ program ids
    def pid_setup(self, b: KernelBuilder, loop_index: int, counts: list[str], counts_host: list[str], ndims: int,
                  programs_wait: bool = False) -> list[str]:
        """The loop's program ids under the config's pid_type ("persistent_dynamic" opens a loop
        over drawn tiles that `pid_finish` closes). A loop whose programs wait for each other runs
        one program per iteration (a persistent program takes its next work item only after its
        wait, so the programs it waits for might never start)."""
        self.found.top_loops.append(ndims)
        pid_type = self.config.get("pid_type", "flat") if "pid_type" in self.config else "flat"
        if programs_wait:
            self.found.waiting_loops.add(loop_index)
            if pid_type.startswith("persistent"):
                pid_type = "flat"
        # reversed, the programs launched first take the last tiles: where the last tiles are the
        # longest (a causal attention's query tiles), the short ones fill the final wave
        reverse = bool(self.knob("tile_reversals", loop_index, False)) and not programs_wait
        order = list(self.knob("loop_orders", loop_index, list(range(ndims)))) if ndims > 1 else [0]
        if sorted(order) != list(range(ndims)):
            raise exc.InvalidConfig(f"loop_orders[{loop_index}]={order} is not a permutation of {ndims} dims")
        group = int(self.knob("l2_groupings", loop_index, 1)) if ndims > 1 else 1
        launch = self.current_launch
        if self.flatten(ndims) and pid_type == "xyz":
            pid_type = "flat"
        if pid_type == "xyz" and ndims <= 3:
            return self.xyz_pids(b, counts, counts_host, order, reverse)
        total_host = _product(counts_host)
        if pid_type == "persistent_dynamic":
            total = b.assign(_product(counts), "total")
            launch["grid"] = f"(min(_num_sms(_device), {total_host}),)"
            launch["helpers"].update(("_num_sms", "_counters"))
            # tickets from the launch stream's scheduler counter (lane 1 of `_counters`, apart from
            # the host code's counters): each program draws its next tile when it finished one
            tickets = b.param(f"_counters(1, _device, {SCHEDULER_LANE})", "tickets")
            pid = b.assign(f"tl.atomic_add({tickets}, 1, sem='relaxed')", "virtual_pid")
            b.emit(f"while {pid} < {total}:")
            b.depth += 1
            self.tile_draw = (pid, tickets, total)
        elif pid_type in ("persistent_blocked", "persistent_interleaved"):
            total = b.assign(_product(counts), "total")
            launch["grid"] = f"(min(_num_sms(_device), {total_host}),)"
            launch["helpers"].add("_num_sms")
            # flattened, the tile loop and the loops inside it pipeline as one loop: the next
            # tile's first loads are issued during this tile's epilogue
            flat = ", flatten=True" if self.knob("persistent_flattens", loop_index, False) else ""
            if pid_type == "persistent_interleaved":
                b.emit(f"for virtual_pid in tl.range(tl.program_id(0), {total}, tl.num_programs(0){flat}):")
            else:
                per = b.assign(f"tl.cdiv({total}, tl.num_programs(0))", "per")
                start = b.assign(f"tl.program_id(0) * {per}", "start")
                b.emit(f"for virtual_pid in tl.range({start}, tl.minimum({start} + {per}, {total}){flat}):")
            b.depth += 1
            pid = "virtual_pid"
        elif pid_type in ("flat", "xyz"):
            pid = b.assign("tl.program_id(0)", "pid")
            launch["grid"] = f"({total_host},)"
            if reverse:
                total = b.assign(_product(counts), "total")
        else:
            raise exc.InvalidConfig(f"unknown pid_type {pid_type!r}")
        if reverse:
            pid = b.assign(f"{total} - 1 - {pid}", "pid")
        return self.decompose(b, pid, counts, order, group)

    def pid_finish(self, b: KernelBuilder) -> None:
        """Closes a "persistent_dynamic" loop after its body: the program draws its next ticket; the
        draw that ends the last program (ticket total + programs - 1: every program drew its one
        ticket past the tiles) resets the counter to 0 for the stream's next launch."""
        if self.tile_draw is None:
            return
        pid, tickets, total = self.tile_draw
        self.tile_draw = None
        b.emit(f"{pid} = tl.atomic_add({tickets}, 1, sem='relaxed')")
        b.depth -= 1
        b.emit(f"if {pid} == {total} + tl.num_programs(0) - 1:")
        b.emit(f"    tl.store({tickets}, 0)")

    def xyz_pids(self, b: KernelBuilder, counts: list[str], counts_host: list[str], order: list[int],
                 reverse: bool) -> list[str]:
        """Program ids of pid_type "xyz": loop dim order[k] on grid axis k (from its last tile
        down when `reverse`). CUDA caps the y and z axes at 65535 programs, so when either count
        exceeds that, the launcher folds the whole grid into x and the kernel (a constexpr variant)
        splits program_id(0) as pid_type "flat" does."""
        launch = self.current_launch
        grid = "(" + ", ".join(counts_host[d] for d in order) + ",)"

        def axis_pid(axis: int, dim: int) -> str:
            return f"{counts[dim]} - 1 - tl.program_id({axis})" if reverse else f"tl.program_id({axis})"

        if len(order) == 1:
            launch["grid"] = grid
            return [b.assign(axis_pid(0, order[0]), "pid")]
        launch["prologue"].append(f"_grid = _xyz_grid({grid})")
        launch["grid"] = "_grid"
        launch["helpers"].add("_xyz_grid")
        folded = b.constexpr("_XYZ_FOLDED", "len(_grid) == 1")
        pids = [b.fresh("pid") for _ in order]
        b.emit(f"if {folded}:")
        with b.block():
            flat = "tl.program_id(0)"
            if reverse:
                flat = b.assign(f"{_product(counts)} - 1 - tl.program_id(0)", "pid")
            for name, value in zip(pids, self.decompose(b, flat, counts, order, 1)):
                b.emit(f"{name} = {value}")
        b.emit("else:")
        with b.block():
            for axis, dim in enumerate(order):
                b.emit(f"{pids[dim]} = {axis_pid(axis, dim)}")
        return pids

    def decompose(self, b: KernelBuilder, pid: str, counts: list[str], order: list[int], group: int) -> list[str]:
        pids = [""] * len(counts)
        if len(order) == 1:
            pids[order[0]] = pid
            return pids
        first, second = order[0], order[1]
        if group > 1:
            n_first = b.assign(counts[first], "num_pid")
            n_second = b.assign(counts[second], "num_pid")
            in_group = b.assign(f"{group} * {n_second}", "in_group")
            inner = b.assign(f"{pid} % ({n_first} * {n_second})", "inner")
            group_id = b.assign(f"{inner} // {in_group}", "group")
            first_pid = b.assign(f"{group_id} * {group}", "first")
            group_size = b.assign(f"tl.minimum({n_first} - {first_pid}, {group})", "gsize")
            pids[first] = b.assign(f"{first_pid} + (({inner} % {in_group}) % {group_size})", "pid")
            pids[second] = b.assign(f"({inner} % {in_group}) // {group_size}", "pid")
            rest = f"({pid} // ({n_first} * {n_second}))"
            remaining = order[2:]
        else:
            rest = pid
            remaining = order
        for i, dim in enumerate(remaining):
            if i == len(remaining) - 1:
                pids[dim] = b.assign(rest, "pid")
            else:
                pids[dim] = b.assign(f"{rest} % ({counts[dim]})", "pid")
                rest = f"({rest} // ({counts[dim]}))"
        return pids

    # ------------------------------------------------------------------ the whole function
    def run(self, host_only: bool = False, baked: list = ()) -> None:
        """Compiles the kernel; `host_only` runs its host statements only and evaluates the `baked`
        expressions of a compile (at their device loops) into `found.specialized`."""
        with hl.host_context(self):
            for kind, stmt in self.parsed.body:
                if kind == "device" and host_only:
                    for index, expr, guard in baked:
                        if index == self.top_loop_index:
                            value = self.try_eval(ast.parse(expr, mode="eval").body, self.env)
                            (self.found.guards if guard else self.found.specialized).append(value)
                    self.top_loop_index += 1
                    continue
                if kind == "device":
                    self.compile_device_loop(stmt)
                else:
                    self.host_statement(stmt)

    def host_statement(self, stmt: ast.stmt) -> None:
        bad = find_device_calls(stmt, self.globals)
        if bad is not None:
            raise exc.NotSupported("hl.tile/hl.grid loops must be top-level statements of the kernel", self.location(bad))
        start = len(self.replay)
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            if self.is_compile_time(stmt if isinstance(stmt, ast.AugAssign) else stmt.value):
                self.compile_time_names |= bound
            else:
                self.compile_time_names -= bound
        if not isinstance(stmt, ast.Return):
            self.sizes.before(stmt)
            code = host_statement_code(stmt, self.parsed.filename)
            reads = DeviceReads()
            try:
                with reads:
                    exec(code, self.globals, self.env)
            except exc.CompileError as err:
                raise err.with_location(self.location(stmt))
            except exc.Base:
                raise
            except Exception as err:
                raise exc.NotSupported(f"host statement failed: {type(err).__name__}: {err}", self.location(stmt)) from None
            if reads.reads or self.runtime_names.intersection(self.names_in(stmt)):
                assigned = {n.id for node in ast.walk(stmt) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                            for n in ast.walk(target) if isinstance(n, ast.Name)}
                tensors = {name for name in assigned if isinstance(self.env.get(name), torch.Tensor)}
                self.runtime_sized |= tensors
                self.runtime_scalars |= assigned - tensors
                self.compile_time_names -= assigned
            if isinstance(stmt, ast.Assign) and any(
                isinstance(n, ast.Call) and self.try_eval(n.func, self.env) is hl.specialize for n in ast.walk(stmt.value)
            ):
                for target in stmt.targets:
                    self.static_names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        self.replay_queue = list(self.replay[start:])
        new_stmt = LauncherRewriter(self, self.env).visit(ast.parse(ast.unparse(stmt)).body[0])
        self.launcher_lines.extend(ast.unparse(new_stmt).splitlines())

    def compile_device_loop(self, stmt: ast.For) -> None:
        builder = KernelBuilder(self.parsed.fn.__name__)
        self.current_launch = {"grid": "(1,)", "helpers": set(), "prologue": [], "epilogue": []}
        loop_index = self.top_loop_index
        compiler = DeviceCompiler(self, builder)
        token = TENSOR_SHAPES_SEEN.set(self.found.tensor_shapes)
        try:
            compiler.compile_top_loop(stmt, self.top_loop_index)
            compiler.define_warp_specialize()
        finally:
            TENSOR_SHAPES_SEEN.reset(token)
        self.top_loop_index += 1
        for rdim in compiler.rdims.values():
            if rdim.in_dot and not rdim.looped:
                host_expr, static = self.rdim_host[id(rdim)]
                block = max(DOT_MIN_DIM, triton.next_power_of_2(max(rdim.size_value, 1)))
                builder.params[rdim.size_expr].host_expr = str(block) if static else f"max({DOT_MIN_DIM}, triton.next_power_of_2(max(1, {host_expr})))"
                if block != rdim.size_value and not rdim.needs_mask:
                    raise exc.NotSupported("internal: dot rdim padding without mask")
        if self.config.get("static_reduction_sizes"):
            self.make_reduction_sizes_constexpr(compiler.rdims.values(), builder)
        maxnreg = self.config.get("maxnreg")
        if maxnreg is not None:
            builder.compile_options["maxnreg"] = int(maxnreg)
        def this_loop(value):  # a per-loop field (backend, shared_operands, ...): one value or one per loop
            return value[loop_index] if isinstance(value, (list, tuple)) else value

        gluon = this_loop(self.config.get("backend", "triton")) == "gluon"
        first_tensor = next((p.host_expr for p in builder.params.values() if isinstance(self.try_eval(ast.parse(p.host_expr, mode="eval").body, self.env), torch.Tensor)), None)
        if not gluon:
            self.dependent_launch_lines(builder, loop_index, first_tensor)
        name, source = builder.render()
        if gluon:
            name, source = self.gluon_kernel(builder, source, {flag: this_loop(self.config.get(flag, False))
                                                              for flag in GLUON_FLAGS}, loop_index)
        elif self.discovering:
            self.note_gluon_form(builder, source)
        launch = self.current_launch
        args = []
        for p in builder.ordered_params():
            args.append(f"{p.name}={p.host_expr}" if p.constexpr else p.host_expr)
        warps = int(self.config.get("num_warps", 4)) if "num_warps" in self.config and not gluon else 4
        stages = int(self.config.get("num_stages", 2)) if "num_stages" in self.config and not gluon else 2
        if "_num_sms" in launch["helpers"]:
            self.launcher_lines.append(f"_device = {first_tensor}.device" if first_tensor else "_device = torch.device('cpu')")
        self.launcher_lines.extend(launch["prologue"])
        if builder.uses_tensor_descriptors:
            # the descriptor flags (MemoryMixin.tma_flag) read this; see _descriptor_scratch_fits
            sites = source.count("tl.make_tensor_descriptor(")
            self.launcher_lines.append(f"_descriptors_fit = _descriptor_scratch_fits({launch['grid']}, {sites})")
            self.launcher_lines.append("_ensure_allocator()")
            launch["helpers"].update(("_descriptor_scratch_fits", "_ensure_allocator"))
        if gluon:
            launch["helpers"].update(("_tma_descriptor", "_tma_operand"))
        self.kernels.append(KernelLaunch(name, source, builder, launch["grid"], launch["helpers"]))
        call = f"{name}[{launch['grid']}]({', '.join(args + [f'num_warps={warps}', f'num_stages={stages}'])})"
        self.launcher_lines.append(call)
        self.launcher_lines.extend(launch["epilogue"])

    def dependent_launch_lines(self, builder: KernelBuilder, loop_index: int, first_tensor: str | None) -> None:
        """The config's `dependent_launches` (ConfigSpec._dependent_launches) in top-level loop
        `loop_index`'s Triton kernel: where the next loop's kernel is a dependent launch, this
        kernel's programs let it launch from their start (griddepcontrol.launch_dependents: its
        programs are then scheduled once every program of this one has started, so they take
        only slots this kernel leaves free); where this loop's kernel is one, it compiles with
        Triton's `launch_pdl` and its programs wait at their start until the kernel before it has
        finished and its writes are visible (griddepcontrol.wait; transitively every earlier
        kernel, whose launches each waited for the one before). Both are under a constexpr flag
        that the launcher sets where the device runs them (`_dependent_launch`: compute capability
        9.0 or later, not Triton's interpreter): elsewhere the kernel neither waits nor lets, and
        the launch is an ordinary one."""
        launches = self.config.get("dependent_launches") or ()
        waits = loop_index < len(launches) and launches[loop_index]
        lets = loop_index + 1 < len(launches) and launches[loop_index + 1]
        if not (waits or lets):
            return
        flag = builder.constexpr("DEPENDENT_LAUNCH", f"_dependent_launch({first_tensor})" if first_tensor else "False")
        self.current_launch["helpers"].add("_dependent_launch")
        steps = (["tl.extra.cuda.gdc_launch_dependents()"] if lets else []) + (["tl.extra.cuda.gdc_wait()"] if waits else [])
        builder.lines[0:0] = [f"    if {flag}:"] + [f"        {step}" for step in steps]
        if waits:
            builder.compile_options["launch_pdl"] = True

    def gluon_kernel(self, builder: KernelBuilder, source: str, flags: dict, loop_index: int) -> tuple[str, str]:
        """(name, source) of the config's `backend: "gluon"` kernel: the emitted Triton kernel
        lowered by gluon_lowering under this kernel's `flags` (GLUON_FLAGS: its accumulating dots
        reading their register operands from shared memory with `shared_operands`, its masks
        comparing tile-relative indices with `relative_masks`, a persistent grid's stores staged
        in their tile's resident slot with `resident_stores`) for top-level loop `loop_index`, its
        rings `range_num_stages` deep where its device loops set it, else `num_stages`. The launcher builds its TMA descriptors (`_tma_descriptor`),
        passed as parameters added here; a stored tensor TMA cannot address is written through an
        aligned copy of it (`_tma_operand`), copied back after the launch."""
        from .gluon_lowering import HEADER, Lowering, NotLowerable, consumer_registers

        groups = int(self.config["consumer_groups"])
        helpers, kernel = split_helpers(source)
        try:
            lowering = Lowering(kernel, groups, **flags)
            sites = lowering.sites()
        except NotLowerable as err:
            raise exc.NotSupported(f'backend "gluon": {err}') from None
        rows = builder.params[lowering.rows].host_expr
        if not rows.isdigit() or int(rows) != 64 * groups:
            raise exc.InvalidConfig(f'backend "gluon" takes 64 rows per consumer warpgroup: the row block is '
                                    f"{rows}, consumer_groups {groups}")
        dtypes = self.tma_dtypes(builder, {site.tensor for site in sites})
        stored = {tma.tensor for tma, _ in lowering.stores.values()}
        for tensor in sorted(dtypes, key=list(builder.params).index):
            host = builder.params[tensor].host_expr
            if tensor in stored:
                target = f"_{host}_tma"
                self.launcher_lines.append(f"{target} = _tma_operand({host})")
                self.current_launch["epilogue"].append(f"if {target} is not {host}:")
                self.current_launch["epilogue"].append(f"    {host}.copy_({target})")
                builder.params[tensor].host_expr = target
            else:
                self.launcher_lines.append(f"{host} = _tma_operand({host})")
        for site in sites:
            host = builder.params[site.tensor].host_expr
            block = ["64" if b == "ROWS" else b if b.isdigit() else builder.params[b].host_expr for b in site.block]
            bounds = dict(site.bounds)
            shape = [f"min({host}.size({d}), {builder.params[bounds[d]].host_expr})" if d in bounds else
                     f"{host}.size({d})" for d in range(len(block))]
            variable = f"_{site.name}"
            self.launcher_lines.append(f"{variable} = _tma_descriptor({host}, [{', '.join(block)}], "
                                       f"[{', '.join(shape)}])")
            site.name = builder.param(variable, site.name)
        builder.constexpr("GROUPS", str(groups))
        depths = [self.knob("range_num_stages", loop, 0) for loop, kernel in enumerate(self.found.device_loop_kernels)
                  if kernel == loop_index]
        builder.constexpr("STAGES", str(int(next((d for d in depths if d), 0) or self.config.get("num_stages") or 2)))
        options = builder.compile_options
        builder.constexpr("CONSUMER_REGS", str(consumer_registers(groups, options.get("maxnreg"))))
        params = [(p.name, p.constexpr) for p in builder.ordered_params()]
        # the name's digest covers the rendered text, not the Triton source it came from: configs
        # that differ only in what the lowering drops (a TMA copy's eviction policy) share a kernel
        placeholder = f"_{self.parsed.fn.__name__}_gluon_KERNEL"
        try:
            body = lowering.render(placeholder, params, {t: str(d) for t, d in dtypes.items()})
        except NotLowerable as err:
            raise exc.NotSupported(f'backend "gluon": {err}') from None
        text = HEADER + "\n\n" + helpers + body + compile_options_text(options).replace("{name}", placeholder)
        name = f"_{self.parsed.fn.__name__}_gluon_{hashlib.sha1(text.encode()).hexdigest()[:10]}"
        return name, text.replace(placeholder, name)

    def tma_dtypes(self, builder: KernelBuilder, tensors: Iterable[str]) -> dict:
        """{tensor parameter: dtype} of the Gluon lowering's TMA operands (`tensors`); NotSupported
        unless each is a host-code name of a float16 or bfloat16 tensor."""
        dtypes = {}
        for tensor in set(tensors):
            host = builder.params[tensor].host_expr
            if not host.isidentifier():
                raise exc.NotSupported(f'backend "gluon": the TMA operand {host} is not a name in host code')
            dtypes[tensor] = self.try_eval(ast.parse(host, mode="eval").body, self.env).dtype
            if dtypes[tensor] not in (torch.float16, torch.bfloat16):
                raise exc.NotSupported(f'backend "gluon": {host} is {dtypes[tensor]}; its dots take float16 or bfloat16')
        return dtypes

    def note_gluon_form(self, builder: KernelBuilder, source: str) -> None:
        """Discovery: the row block of this top-level loop when the Gluon back end can lower its
        kernel (found.gluon_rows; None where it cannot), so the config space offers the back end."""
        form = gluon_form(split_helpers(source)[1])
        if form is not None:
            try:
                self.tma_dtypes(builder, form[1])
            except Exception:  # noqa: BLE001 - refused or unreadable: not offered; a config asking for it gets the error
                form = None
        self.found.gluon_rows.append(None if form is None else form[0])

    def make_reduction_sizes_constexpr(self, rdims, builder: KernelBuilder) -> None:
        """static_reduction_sizes: the parameter carrying each run-time reduction extent becomes a
        constexpr, so Triton folds it (constant trip counts, masks and divisors) and compiles the
        kernel once per distinct extent at run time, as torch.compile does with its static shapes."""
        for rdim in rdims:
            _, static = self.rdim_host[id(rdim)]
            param = builder.params.get(rdim.size_param)
            if not static and param is not None:
                param.constexpr = True
