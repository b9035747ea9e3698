"""Device compiler: turns the body of one top-level `hl.tile`/`hl.grid` loop into a Triton kernel body.

It walks the loop's AST once, evaluating each expression to a device value (values.py) and emitting
Triton statements eagerly. Values that span a looped reduction dimension stay lazy and are
re-materialized inside a chunk loop by the reduction or store that consumes them."""
from __future__ import annotations

import ast
import types
from typing import Any

import torch

from . import exc
from . import language as hl
from .emitter import KernelBuilder
from .inline import InlineMixin, inlinable
from .inline_triton import InlineTritonMixin
from .nested import JaggedArgument, NestedMixin
from .pointwise import HOST_TENSOR_ALLOCATIONS, PointwiseMixin
from .values import (ONE, BlockDim, DeviceSlice, DimSize, HostScalar, HostTensor, JaggedDim, RDim, TileVal, TVal, place,
                     placed_mask, tl_dtype)

UNSUPPORTED_STATEMENTS = {
    ast.While: "while loop",
    ast.Try: "try statement",
    ast.With: "with statement",
    ast.Return: "return inside a device loop",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.FunctionDef: "nested function definition",
    ast.Lambda: "lambda",
    ast.Raise: "raise",
    ast.Delete: "del statement",
    ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement",
    ast.Assert: "assert statement",
}


def whole_tiles(begin: Any, end: Any, block: int | None) -> bool:
    """Whether tiles of `block` from `begin` to `end` are provably all whole (static bounds whose span
    the block divides), so none needs a tail mask."""
    return isinstance(begin, int) and isinstance(end, int) and bool(block) and (end - begin) % block == 0


# A loop whose end is known only on the device (a jagged tile's longest lane, `hl.tile(start, end)`
# of loaded bounds) offers blocks as one over this many positions.
DEVICE_EXTENT_HINT = 1024


def slice_length(node: ast.Slice) -> ast.AST | None:
    """The length of a slice written `start:start + length` (or `start:length + start`), else None."""
    upper = node.upper
    if node.step is not None or node.lower is None or not isinstance(upper, ast.BinOp) or not isinstance(upper.op, ast.Add):
        return None
    start = ast.dump(node.lower)
    if ast.dump(upper.left) == start:
        return upper.right
    return upper.left if ast.dump(upper.right) == start else None


class LoopSpec:
    """The iteration space of an `hl.tile`/`hl.grid` call."""

    def __init__(self, kind: str, begins: list, ends: list, block_sizes: list, nodes: list, lengths: Any = None):
        self.kind = kind
        self.begins = begins
        self.ends = ends
        self.block_sizes = block_sizes
        self.nodes = nodes
        self.lengths = lengths  # hl.jagged_tile's per-lane ends (a device tensor over enclosing tiles)


class DeviceCompiler(InlineMixin, InlineTritonMixin, NestedMixin, PointwiseMixin):
    def __init__(self, session: Any, builder: KernelBuilder):
        self.session = session
        self.builder = builder
        self.scope: dict[str, Any] = {}
        self.rdims: dict[Any, RDim] = {}
        self.setup_lines: list[str] = []
        self.chunk_memo: dict[int, str] | None = None
        self.reduction_pass = False  # materializing a looped reduction's operand (memory.load: "reread")
        self.current_node: ast.AST | None = None
        self.in_dot_loop = False
        self.open_device_loops: list[int] = []  # indices of the device loops being compiled
        self.runtime_branches = 0  # run-time `if` bodies open around the code being compiled
        self.following: list[list[ast.stmt]] = []  # per open block, the statements after the current one
        self.unrolled_sites: dict | None = None  # inside an unrolled loop: device_loop_site's places by loop node
        # the loops open around the code being compiled, outermost first (the top-level loop, then
        # device loops): each a list of (tile, or a grid's index value, end) per dimension
        self.open_loops: list[list[tuple[Any, Any]]] = []
        self.bound_loop: list[tuple[Any, Any]] = []  # the loop whose body is compiled next
        self.init_inlining()
        self.init_random()

    # ------------------------------------------------------------------ errors
    def error(self, cls: type, message: str, node: ast.AST | None = None) -> exc.CompileError:
        return cls(message, self.session.location(node or self.current_node))

    # ------------------------------------------------------------------ top-level loop
    def compile_top_loop(self, node: ast.For, loop_index: int) -> dict:
        spec = self.loop_spec(node.iter, top_level=True)
        for value in spec.begins + spec.ends:
            if not isinstance(value, (int, HostScalar)):
                raise self.error(exc.NotSupported, "top-level loop bounds must be computed in host code", node.iter)
        tiles = self.top_level_tiles(spec, loop_index, self.waits_for_programs(node.body))
        self.bind_loop_target(node.target, tiles, spec)
        self.open_loops = [self.bound_loop]
        self.statements(node.body)
        self.session.pid_finish(self.builder)
        if node.orelse:
            raise self.error(exc.NotSupported, "for/else in device code", node)
        body, self.builder.lines = self.builder.lines, []
        self.builder.lines = self.setup_lines + body
        return tiles

    def waits_for_programs(self, body: list[ast.stmt]) -> bool:
        """Whether a loop body waits for other programs (hl.wait, or hl.signal with `wait_for`)."""
        for sub, resolve in self.nodes_through_calls(body):
            if isinstance(sub, ast.Call):
                callee = resolve(sub.func)
                waits_for_value = len(sub.args) > 3 or any(k.arg == "wait_for" for k in sub.keywords)
                if callee is hl.wait or (callee is hl.signal and waits_for_value):
                    return True
        return False

    def top_level_tiles(self, spec: LoopSpec, loop_index: int, programs_wait: bool) -> list:
        """Emits the program-id to tile-offset mapping selected by the config."""
        b = self.builder
        counts, dims = [], []
        for i, (begin, end) in enumerate(zip(spec.begins, spec.ends)):
            begin_s, end_s = self.atom(begin), self.atom(end)
            if spec.kind == "grid":
                dims.append(None)
                counts.append((f"({end_s} - {begin_s})", self.host_text(end, begin)))
                continue
            block_id, fixed = self.session.block_for(spec.block_sizes[i], self.size_value(end, begin), device_loop=False)
            bs = self.block_constexpr(block_id, fixed)
            dims.append((block_id, bs, begin_s, end_s))
            counts.append((f"tl.cdiv({end_s} - {begin_s}, {bs})", f"triton.cdiv({self.host_text(end, begin)}, {self.block_host(block_id, fixed)})"))
        pids = self.session.pid_setup(b, loop_index, [c[0] for c in counts], [c[1] for c in counts], len(counts), programs_wait)
        tiles = []
        for i, dim in enumerate(dims):
            begin_s = self.atom(spec.begins[i])
            if dim is None:
                tiles.append(TVal(torch.int32, (), name=b.assign(f"{begin_s} + {pids[i]}", "idx"),
                                  at_least=self.lower_bound(spec.begins[i])))
                continue
            block_id, bs, begin_s, end_s = dim
            offset = b.assign(f"{begin_s} + {pids[i]} * {bs}", "offset")
            tiles.append(self.make_tile(block_id, bs, offset, begin_s, end_s, spec.ends[i], spec.begins[i]))
        return tiles

    def make_tile(self, block_id: int, bs: str, offset: str, begin_s: str, end_s: str, end: Any, begin: Any,
                  masked: bool = True) -> TileVal:
        b = self.builder
        index = b.assign(f"{offset} + tl.arange(0, {bs})", "indices")
        block = int(bs) if bs.isdigit() else self.session.block_value(block_id)
        needs_mask = masked and not whole_tiles(begin, end, block)
        mask = b.assign(f"{index} < {end_s}", "mask") if needs_mask else None
        dim = BlockDim(block_id, bs, index, mask, bs)
        end_value = end if isinstance(end, int) else end.value if isinstance(end, HostScalar) else None
        begin_host = self.host_expr_of(begin) if isinstance(begin, (int, HostScalar)) else None
        return TileVal(dim, offset, end_s, begin_s, end_value, None if end_value is None else self.host_expr_of(end),
                       begin_host, self.lower_bound(begin))

    def block_constexpr(self, block_id: int, fixed: int | None) -> str:
        if fixed is not None:
            return str(fixed)
        name = f"_BLOCK_SIZE_{block_id}"
        return self.builder.constexpr(name, str(self.session.block_value(block_id)))

    def block_host(self, block_id: int, fixed: int | None) -> str:
        return str(fixed if fixed is not None else self.session.block_value(block_id))

    def host_text(self, end: Any, begin: Any) -> str:
        end_t = self.host_expr_of(end)
        begin_t = self.host_expr_of(begin)
        return end_t if begin_t == "0" else f"({end_t}) - ({begin_t})"

    def host_expr_of(self, value: Any) -> str:
        if isinstance(value, HostScalar):
            return self.session.host_expr(value)
        return repr(value)

    def size_value(self, end: Any, begin: Any) -> int:
        def val(v: Any) -> int:
            if isinstance(v, HostScalar):
                return int(v.value)
            if isinstance(v, int):
                return v
            return 0

        return max(val(end) - val(begin), 0) if not isinstance(end, TVal) else DEVICE_EXTENT_HINT

    def bind_loop_target(self, target: ast.AST, tiles: list, spec: LoopSpec) -> None:
        """Binds the loop variable(s) to `tiles`, and notes them with the loop's ends as the loop
        whose body is compiled next (`loop_body` opens it; see RandomMixin.random_offsets)."""
        self.bound_loop = list(zip(tiles, spec.ends))
        if isinstance(target, ast.Name):
            if len(tiles) != 1:
                self.scope[target.id] = tuple(tiles)
            else:
                self.scope[target.id] = tiles[0]
            return
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(tiles):
            for elt, tile in zip(target.elts, tiles):
                if not isinstance(elt, ast.Name):
                    raise self.error(exc.NotSupported, "loop target must be names", target)
                self.scope[elt.id] = tile
            return
        raise self.error(exc.ShapeMismatch, f"loop target unpacks {len(tiles)} dimension(s)", target)

    # ------------------------------------------------------------------ loop specs
    def loop_spec(self, call: ast.AST, top_level: bool) -> LoopSpec:
        if not isinstance(call, ast.Call):
            raise self.error(exc.NotSupported, "device loops must iterate over hl.tile(...) or hl.grid(...)", call)
        fn = self.resolve_callee(call.func)
        if fn not in (hl.tile, hl.grid, hl.jagged_tile):
            raise self.error(exc.NotSupported, f"loop over {ast.unparse(call.func)}(...); use hl.tile or hl.grid", call)
        kind = "grid" if fn is hl.grid else "tile"
        kwargs = {k.arg: k.value for k in call.keywords}
        args = list(call.args)
        unknown = set(kwargs) - {"block_size"}
        if unknown:
            raise self.error(exc.NotSupported, f"hl.{kind} keyword(s) {sorted(unknown)}", call)
        if fn is hl.jagged_tile:
            return self.jagged_spec(call, args, kwargs)
        if len(args) == 1:
            ends = self.loop_bounds(args[0])
            begins = [0] * len(ends)
        elif len(args) == 2:
            begins, ends = self.loop_bounds(args[0]), self.loop_bounds(args[1])
            if len(begins) != len(ends):
                raise self.error(exc.ShapeMismatch, "hl.tile(begin, end) with different ranks", call)
        else:
            raise self.error(exc.NotSupported, f"hl.{kind} with {len(args)} positional arguments", call)
        block_sizes: list = [None] * len(ends)
        if "block_size" in kwargs:
            if kind == "grid":
                raise self.error(exc.NotSupported, "hl.grid does not take block_size", call)
            raw = self.expr(kwargs["block_size"])
            raw = list(raw) if isinstance(raw, (list, tuple)) else [raw]
            if len(raw) != len(ends):
                raise self.error(exc.ShapeMismatch, "block_size list length differs from the number of dimensions", call)
            block_sizes = raw
        return LoopSpec(kind, begins, ends, block_sizes, args)

    def jagged_spec(self, call: ast.Call, args: list, kwargs: dict) -> LoopSpec:
        """`hl.jagged_tile(lengths)`: a tile loop from 0 to the longest of `lengths`, whose tiles'
        dim is masked per lane (values.JaggedDim; a scalar length is a plain tile loop's end)."""
        if len(args) != 1:
            raise self.error(exc.NotSupported, f"hl.jagged_tile with {len(args)} positional arguments", call)
        lengths = self.expr(args[0])
        block_sizes = [self.expr(kwargs["block_size"])] if "block_size" in kwargs else [None]
        if not isinstance(lengths, TVal) or lengths.shape == ():
            return LoopSpec("tile", [0], [self.as_bound(lengths, args[0])], block_sizes, args)
        if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise self.error(exc.TypeMismatch, f"hl.jagged_tile lengths of {lengths.dtype}", call)
        if any(d is not ONE and not isinstance(d, BlockDim) for d in lengths.shape):
            raise self.error(exc.ShapeMismatch, "hl.jagged_tile lengths must span enclosing tiles only", call)
        longest = self.reduce("max", self.where(self.lane_mask_of(lengths), lengths, 0))
        return LoopSpec("tile", [0], [longest], block_sizes, args, lengths=lengths)

    def lane_mask_of(self, value: TVal) -> Any:
        """Where `value`'s lanes lie inside their tiles (True without masked dims)."""
        masks = [placed_mask(value.shape, axis) for axis in range(len(value.shape))]
        kept = [m for m in masks if m is not None]
        if not kept:
            return True
        return TVal(torch.bool, value.shape, name=self.builder.assign(" & ".join(f"({m})" for m in kept), "lanes"))

    def loop_bounds(self, node: ast.AST) -> list:
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.as_bound(self.expr(elt), elt) for elt in node.elts]
        value = self.expr(node)
        if isinstance(value, torch.Size):
            value = list(value)
        if isinstance(value, (list, tuple)):
            out = list(value)
            if isinstance(node, (ast.List, ast.Tuple)):
                return [self.as_bound(v, n) for v, n in zip(out, node.elts)]
            return [self.as_bound(v, node, i) for i, v in enumerate(out)]
        return [self.as_bound(value, node)]

    def as_bound(self, value: Any, node: ast.AST, index: int | None = None) -> Any:
        if isinstance(value, TileVal):
            raise self.error(exc.TypeMismatch, "a tile is not a loop bound; use tile.begin / tile.end", node)
        if isinstance(value, int) and not isinstance(value, bool) and index is not None:
            if self.session.static_or_specialized(value) and self.session.is_static_node(node):
                return value
            return self.session.host_scalar(f"({ast.unparse(node)})[{index}]", value, self.builder)
        if isinstance(value, (int, HostScalar)) and not isinstance(value, bool):
            return value
        if isinstance(value, TVal) and value.shape == ():
            return value
        raise self.error(exc.TypeMismatch, f"loop bound must be an integer, got {type(value).__name__}", node)

    # ------------------------------------------------------------------ statements
    def statements(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            self.current_node = stmt
            self.following.append(body[i + 1:])
            try:
                self.statement(stmt)
            except exc.CompileError as err:
                raise err.with_location(self.session.location(stmt))
            finally:
                self.following.pop()

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Return) and self.inline_stack:
            raise self.error(exc.NotSupported, "return inside a loop or branch of an inlined function; "
                             "an inlined function returns at its end", node)
        for cls, what in UNSUPPORTED_STATEMENTS.items():
            if isinstance(node, cls):
                raise self.error(exc.NotSupported, f"{what} is not supported in device code", node)
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign_target(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign_target(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant):
                return
            self.expr(node.value)
        elif isinstance(node, ast.For):
            self.device_loop(node)
        elif isinstance(node, ast.If):
            self.if_statement(node)
        elif isinstance(node, ast.Pass):
            return
        else:
            raise self.error(exc.NotSupported, f"{type(node).__name__} statement in device code", node)

    def assign_target(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = self.unpack(value, len(target.elts), target)
            for elt, v in zip(target.elts, values):
                self.assign_target(elt, v)
        elif isinstance(target, ast.Subscript):
            tensor = self.expr(target.value)
            if isinstance(tensor, JaggedArgument):
                self.nested_store(tensor, ast.unparse(target.value), self.index_list(target.slice), value, target)
                return
            if not isinstance(tensor, HostTensor):
                raise self.error(exc.NotSupported, "assignment into a device value; only host tensors can be stored to", target)
            self.store(tensor, self.index_list(target.slice), value, None, target)
        else:
            raise self.error(exc.NotSupported, f"assignment to {type(target).__name__}", target)

    def unpack(self, value: Any, count: int, node: ast.AST) -> list:
        if isinstance(value, (tuple, list)) and len(value) == count:
            return list(value)
        raise self.error(exc.ShapeMismatch, f"cannot unpack {type(value).__name__} into {count} names", node)

    def bind(self, name: str, value: Any) -> None:
        carried = self.scope.get(name)
        if isinstance(carried, TVal) and carried.extra == "carried":
            self.keep_aliases(name, carried)
            self.write_carried(carried, value)
            return
        if isinstance(value, TVal) and value.extra == "carried":
            # `y = x` of a carried x: y reads x's variable but does not carry it, so that a loop or
            # branch assigning y gives it a variable of its own instead of overwriting x's
            value = TVal(value.dtype, value.shape, name=value.name)
        self.scope[name] = value

    def keep_aliases(self, name: str, carried: TVal) -> None:
        """Other names bound to the carried variable's current value (`y = x.to(x.dtype)`, a no-op)
        keep that value: they get a copy before the variable is overwritten in place."""
        for other, value in list(self.scope.items()):
            if other != name and isinstance(value, TVal) and value.name == carried.name:
                self.scope[other] = TVal(value.dtype, value.shape, name=self.builder.assign(carried.name, other))

    def aug_assign(self, node: ast.AugAssign) -> None:
        op = node.op
        if isinstance(node.target, ast.Name):
            current = self.expr(node.target)
            self.bind(node.target.id, self.binary(op, current, self.expr(node.value)))
            return
        if isinstance(node.target, ast.Subscript):
            tensor = self.expr(node.target.value)
            if not isinstance(tensor, HostTensor):
                raise self.error(exc.NotSupported, "augmented assignment into a device value", node)
            index = self.index_list(node.target.slice)
            current = self.load(tensor, index, None, node)
            self.store(tensor, index, self.binary(op, current, self.expr(node.value)), None, node)
            return
        raise self.error(exc.NotSupported, f"augmented assignment to {type(node.target).__name__}", node)

    # ------------------------------------------------------------------ loop-carried and branch variables
    def assigned_names(self, body: list[ast.stmt]) -> list[str]:
        names: list[str] = []
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in names:
                    names.append(sub.id)
                elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name) and sub.target.id not in names:
                    names.append(sub.target.id)
        return names

    def live_in(self, name: str, body: list[ast.stmt]) -> bool:
        """Whether a loop body may read `name` before assigning it (so its value crosses iterations)."""
        return self.first_use(name, body) is True

    def live_after(self, name: str) -> bool:
        """Whether the statements after the current one, in its block and then in the enclosing
        blocks, may read `name` before assigning it (so the value a loop or branch leaves in it is
        used). An enclosing loop's next iteration is not followed: a name that iteration reads
        first is live into that loop, which carries it."""
        for block in reversed(self.following):
            use = self.first_use(name, block)
            if use is not None:
                return use
        return False

    def drop_inner_values(self, names: list[str], before: dict, carried: dict) -> None:
        """After a loop or branch: the names it assigned without carrying them hold values defined
        inside it, which Triton does not keep past its end. Nothing after it reads them first
        (`live_after`), so each gets back its value from before (or is unbound), and no later
        branch or loop carries the inner value out of its block."""
        for name in names:
            value = self.scope.get(name)
            if name in carried or not isinstance(value, TVal) or value.extra == "carried" or self.live_after(name):
                continue
            if name in before:
                self.scope[name] = before[name]
            else:
                del self.scope[name]

    def first_use(self, name: str, nodes: list) -> bool | None:
        """How `nodes`, run in order, first use `name`: True when some path may read it before
        assigning it, False when every path assigns it first, None when they do neither. An
        assignment inside one branch of an `if`, or inside a loop (which may run no iteration), is
        not an assignment on every path; an `if` on a compile-time condition has one path, the
        branch it takes."""
        for node in nodes:
            if isinstance(node, ast.If):
                use = self.first_use(name, [node.test])
                if use is None and self.session.is_static_condition(node.test, self.scope):
                    use = self.first_use(name, node.body if self.session.eval_host(node.test) else node.orelse)
                elif use is None:
                    branches = (self.first_use(name, node.body), self.first_use(name, node.orelse))
                    use = True if True in branches else (False if branches == (False, False) else None)
            elif isinstance(node, (ast.For, ast.While)):
                use = self.first_use(name, [node.iter if isinstance(node, ast.For) else node.test])
                rebound = isinstance(node, ast.For) and any(
                    isinstance(sub, ast.Name) and sub.id == name for sub in ast.walk(node.target))
                if use is None and not rebound:
                    use = True if self.first_use(name, node.body + node.orelse) is True else None
            elif isinstance(node, ast.Assign):
                use = self.first_use(name, [node.value])
                if use is None:
                    use = self.first_use(name, node.targets)
            elif isinstance(node, ast.AugAssign):
                use = self.first_use(name, [node.value])
                if use is None:
                    target = node.target
                    use = True if isinstance(target, ast.Name) and target.id == name else self.first_use(name, [target])
            elif isinstance(node, ast.Name):
                use = isinstance(node.ctx, ast.Load) if node.id == name else None
            elif isinstance(node, ast.AST):
                use = self.first_use(name, list(ast.iter_child_nodes(node)))
            else:
                use = None
            if use is not None:
                return use
        return None

    def carry(self, names: list[str]) -> dict[str, TVal]:
        """Materializes the device values that a loop or branch may reassign into stable variables."""
        carried: dict[str, TVal] = {}
        for name in names:
            value = self.scope.get(name)
            if value is None and name not in self.scope:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = self.constant_tensor(value)
            elif isinstance(value, HostScalar):
                value = self.make(value.dtype, (), lambda a: a[0], [value])
            if not isinstance(value, TVal) or value.extra == "carried":
                continue
            self.require_eager(value, "a value carried across a loop or branch")
            var = self.builder.fresh(name)
            self.builder.emit(f"{var} = {value.name}")
            tv = TVal(value.dtype, value.shape, name=var, extra="carried")
            self.scope[name] = tv
            carried[name] = tv
        return carried

    def write_carried(self, carried: TVal, value: Any) -> None:
        value = self.to_tval(value)
        self.require_eager(value, "a value carried across a loop or branch")
        expr = value.name
        if value.shape != carried.shape:
            self.broadcast_shape(value.shape, carried.shape)
            sizes = ", ".join(d.size_expr for d in carried.shape)
            expr = f"tl.broadcast_to({expr}, [{sizes}])"
        if value.dtype != carried.dtype:
            expr = f"({expr}).to({tl_dtype(carried.dtype)})"
        self.builder.emit(f"{carried.name} = {expr}")

    def uncarry(self, carried: dict[str, TVal]) -> None:
        for name, tv in carried.items():
            self.scope[name] = TVal(tv.dtype, tv.shape, name=tv.name)

    # ------------------------------------------------------------------ device loops
    def device_loop(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(exc.NotSupported, "for/else in device code", node)
        callee = self.resolve_callee(node.iter.func) if isinstance(node.iter, ast.Call) else None
        if callee is range:
            raise self.error(exc.NotSupported, "range() loop in device code; use hl.tile or hl.grid, or "
                             "hl.static_range for a loop unrolled at compile time", node)
        if callee not in (hl.tile, hl.grid, hl.jagged_tile):
            self.unrolled_loop(node)
            return
        spec = self.loop_spec(node.iter, top_level=False)
        assigned = self.assigned_names(node.body)
        carried_names = [n for n in assigned if self.live_in(n, node.body) or self.live_after(n)]
        before = dict(self.scope)
        carried = self.carry(carried_names)
        loop_index, blocks, flatten = self.device_loop_site(node, spec)
        b = self.builder
        tiles: list = []
        block_infos = [None if block is None else (*block, self.block_constexpr(*block)) for block in blocks]
        order = list(range(len(spec.ends)))
        opts = self.session.range_options(loop_index)
        specialize = self.session.warp_specialize_flag(loop_index)
        if specialize:
            b.warp_specialize_flags.append(specialize)
        if self.tail_masked(spec, block_infos):
            self.session.mark_peelable(loop_index)
            if self.session.peel_tail(loop_index):
                self.peeled_loop(node, spec, block_infos[0], opts, loop_index, carried_names, carried, bool(specialize))
                self.drop_inner_values(assigned, before, carried)
                return
        if flatten:
            counts = []
            for i, (begin, end) in enumerate(zip(spec.begins, spec.ends)):
                span = self.loop_span(begin, end)
                counts.append(span if block_infos[i] is None else f"tl.cdiv({span}, {block_infos[i][2]})")
            total = " * ".join(counts)
            flat = b.fresh("flat")
            b.emit_loop(f"for {flat} in tl.range(0, {total}{opts}):")
            b.depth += 1
            rest = flat
            for i in order:
                local = b.assign(f"{rest} % {counts[i]}", "lid")
                rest = f"({rest} // {counts[i]})"
                tiles.append(self.loop_tile(spec, i, block_infos[i], f"{self.atom(spec.begins[i])} + {local}" if block_infos[i] is None else f"{self.atom(spec.begins[i])} + {local} * {block_infos[i][2]}"))
            self.bind_loop_target(node.target, tiles, spec)
            self.loop_body(loop_index, node.body)
            b.depth -= 1
        else:
            for i in order:
                begin_s = self.atom(spec.begins[i])
                end_s = self.loop_end(spec.begins[i], spec.ends[i], self.session.unroll_factor(loop_index))
                var = b.fresh("offset" if block_infos[i] else "idx")
                step = block_infos[i][2] if block_infos[i] else "1"
                b.emit_loop(f"for {var} in tl.range({begin_s}, {end_s}, {step}{opts}):")
                b.depth += 1
                tiles.append(self.loop_tile(spec, i, block_infos[i], var))
            self.bind_loop_target(node.target, tiles, spec)
            self.loop_body(loop_index, node.body)
            b.depth -= len(order)
        self.uncarry(carried)
        self.drop_inner_values(assigned, before, carried)

    def device_loop_site(self, node: ast.For, spec: LoopSpec) -> tuple[int, list, bool]:
        """A device loop's place in the config space: its index among the device loops, the (block
        id, fixed size) of each tile dimension (None for a grid's), and whether it is flattened.
        The copies of an unrolled loop's body share their inner loops' places, as Helion gives a
        loop's block sizes and options per site."""
        site = self.unrolled_sites.get(id(node)) if self.unrolled_sites is not None else None
        if site is not None:
            return site
        loop_index = self.session.next_device_loop(self.contains_dot(node.body), in_branch=self.runtime_branches > 0)
        blocks = [None if spec.kind == "grid" else
                  self.session.block_for(spec.block_sizes[i], self.size_value(end, begin), device_loop=True)
                  for i, (begin, end) in enumerate(zip(spec.begins, spec.ends))]
        site = (loop_index, blocks, self.session.flatten(len(spec.ends)))
        if self.unrolled_sites is not None:
            self.unrolled_sites[id(node)] = site
        return site

    def unrolled_loop(self, node: ast.For) -> None:
        """A loop over compile-time items (`hl.static_range(...)`, a tuple or list, `zip` or
        `enumerate` of them), as Helion unrolls it: the body compiled once per item, its target
        bound to the item, as straight-line code (a later copy reads what an earlier one assigned)."""
        items = self.expr(node.iter)
        if not isinstance(items, (tuple, list, range)):
            raise self.error(exc.NotSupported, "device loops iterate over hl.tile(...), hl.grid(...), hl.static_range(...) "
                             f"or a tuple or list, not {type(items).__name__}", node.iter)
        items = list(items)
        outer = self.unrolled_sites
        self.unrolled_sites = {} if outer is None else outer
        try:
            for copy, item in enumerate(items):
                self.assign_target(node.target, item)
                self.following.append(node.body if copy + 1 < len(items) else [])  # the next copy follows this one
                try:
                    self.statements(node.body)
                finally:
                    self.following.pop()
        finally:
            self.unrolled_sites = outer

    def static_range(self, begin_or_end: Any, end: Any = None, step: Any = 1) -> range:
        """`hl.static_range(end)` / `(begin, end, step=1)`: the range of a loop unrolled at compile time."""
        bounds = (0, begin_or_end) if end is None else (begin_or_end, end)
        for value in (*bounds, step):
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.error(exc.NotSupported, "hl.static_range takes integers known at compile time, not "
                                 f"{type(value).__name__} (a loop over a run-time count is hl.grid or hl.tile)")
        if step == 0:
            raise self.error(exc.NotSupported, "hl.static_range with a step of 0")
        return range(int(bounds[0]), int(bounds[1]), int(step))

    def define_warp_specialize(self) -> None:
        """The constexprs the kernel's warp-specialized loops take as `warp_specialize` (called once
        its code is complete): Triton 3.6's Hopper warp specialization aborts compiling a kernel that
        loads through pointers (a dominance assertion), so the launcher passes True only where
        every load of the kernel uses a tensor descriptor (their TMA flags all hold); a kernel with
        a pointer-only load never specializes. Nor does a kernel of several loops (a peeled tail, a
        looped reduction, a second tile loop): the same pass aborts on a loop after the specialized
        one."""
        flags = self.builder.load_flags
        # a tensor loaded at several sites under the same conditions is checked once
        conditions = dict.fromkeys(self.builder.params[f].host_expr for f in flags if f is not None)
        expr = "False" if None in flags or self.builder.loops > 1 else " and ".join(conditions) or "True"
        for name in self.builder.warp_specialize_flags:
            self.builder.constexpr(name, expr)

    def tail_masked(self, spec: LoopSpec, block_infos: list) -> bool:
        """Whether a loop over one tile dimension may end in a partial tile: its end is not provably
        `begin` plus a multiple of its block (then every tile carries a tail mask)."""
        if spec.kind == "grid" or len(spec.ends) != 1:
            return False
        block_id, fixed, _ = block_infos[0]
        return not whole_tiles(spec.begins[0], spec.ends[0], fixed or self.session.block_value(block_id))

    def peeled_loop(self, node: ast.For, spec: LoopSpec, info: tuple, opts: str, loop_index: int,
                    carried_names: list[str], carried: dict, specialized: bool) -> None:
        """A one-dimensional tile loop as two loops over the same body (range_peel_tails): the whole
        tiles, without a tail mask (and with the loop's range options), then the partial last tile
        if there is one (a loop of at most one iteration, masked). The carried values flow from the
        first loop into the second."""
        b = self.builder
        begin, end = spec.begins[0], spec.ends[0]
        bs = info[2]
        begin_s = self.atom(begin)
        if specialized and all(isinstance(v, (int, HostScalar)) for v in (begin, end)):
            self.divisibility_split_loop(node, spec, info, opts, loop_index)
            self.uncarry(carried)
            return
        whole_end = b.assign(f"{begin_s} + {self.loop_span(begin, end)} // {bs} * {bs}", "whole_end")
        for masked, start, stop, options in ((False, begin_s, whole_end, opts), (True, whole_end, self.atom(end), "")):
            if masked:
                self.uncarry(carried)
                carried = self.carry(carried_names)
            var = b.fresh("offset")
            b.emit_loop(f"for {var} in tl.range({start}, {stop}, {bs}{options}):")
            b.depth += 1
            self.bind_loop_target(node.target, [self.loop_tile(spec, 0, info, var, masked)], spec)
            self.loop_body(loop_index, node.body)
            b.depth -= 1
        self.uncarry(carried)

    def divisibility_split_loop(self, node: ast.For, spec: LoopSpec, info: tuple, opts: str, loop_index: int) -> None:
        """range_peel_tails for a warp-specialized loop: Triton 3.6's Hopper warp specialization
        aborts on a kernel with a second loop after the specialized one (the peeled tail), so the
        loop stays one loop, and the launcher passes whether its span is a multiple of the block (a
        constexpr; host bounds only). The kernel compiles the branch it takes: without tail masks
        where every tile is whole, with them elsewhere. Both branches start from the loop's
        carried variables."""
        b = self.builder
        begin, end = spec.begins[0], spec.ends[0]
        bs = info[2]
        block = self.builder.params.get(bs)
        span = f"({self.host_expr_of(end)}) - ({self.host_expr_of(begin)})"
        flag = b.constexpr(f"_WHOLE_TILES_{loop_index}", f"({span}) % ({block.host_expr if block else bs}) == 0")
        for masked in (False, True):
            b.emit("else:" if masked else f"if {flag}:")
            with b.block():
                var = b.fresh("offset")
                end_s = self.loop_end(begin, end, self.session.unroll_factor(loop_index))
                b.emit_loop(f"for {var} in tl.range({self.atom(begin)}, {end_s}, {bs}{opts}):", counted=not masked)
                with b.block():
                    self.bind_loop_target(node.target, [self.loop_tile(spec, 0, info, var, masked)], spec)
                    self.loop_body(loop_index, node.body)

    def loop_end(self, begin: Any, end: Any, unroll: int) -> str:
        """The end of a `tl.range` from `begin` to `end`. Triton 3.6 unrolls a loop whose bounds are
        run-time values with MLIR's loopUnrollByFactor, which counts its iterations as the unsigned
        quotient `(end - begin + step - 1) / step`: an empty range whose end is below its begin (a
        tile past the last row, `hl.tile(first, min(first + block, m))`) then gets a wrapped unrolled
        bound, and the remainder loop runs from below `begin` over iterations of other programs
        (notes/dsl_gaps_kernels.md, gap 13). An unrolled loop over run-time bounds ends at
        max(end, begin)."""
        end_s = self.atom(end)
        if unroll <= 1 or (isinstance(begin, int) and isinstance(end, int)):
            return end_s
        return f"tl.maximum({end_s}, {self.atom(begin)})"

    def loop_span(self, begin: Any, end: Any) -> str:
        """`end - begin` for a dimension of a flattened loop, at least 0 when the bounds are run-time
        values: the flattened trip count is the product of the spans (two negative spans would make
        a positive count), and an unrolled loop must not see a negative count (see loop_end)."""
        span = f"({self.atom(end)} - {self.atom(begin)})"
        if isinstance(begin, int) and isinstance(end, int):
            return span
        return f"tl.maximum({span}, 0)"

    def loop_body(self, loop_index: int, body: list[ast.stmt]) -> None:
        self.open_device_loops.append(loop_index)
        self.open_loops.append(self.bound_loop)
        try:
            self.statements(body)
        finally:
            self.open_device_loops.pop()
            self.open_loops.pop()

    def loop_tile(self, spec: LoopSpec, i: int, info: Any, offset_expr: str, masked: bool = True) -> Any:
        """The tile of a device loop's dimension `i` at `offset_expr`; `masked=False`: a tile known
        to be whole (a peeled loop's main part), which needs no tail mask."""
        b = self.builder
        if info is None:
            return TVal(torch.int32, (), name=b.assign(offset_expr, "idx"), at_least=self.lower_bound(spec.begins[i]))
        block_id, fixed, bs = info
        offset = offset_expr if offset_expr.isidentifier() else b.assign(offset_expr, "offset")
        tile = self.make_tile(block_id, bs, offset, self.atom(spec.begins[i]), self.atom(spec.ends[i]), spec.ends[i],
                              spec.begins[i], masked)
        if spec.lengths is not None:
            tile.dim = self.jagged_dim(tile, spec.lengths)
        return tile

    def jagged_dim(self, tile: TileVal, lengths: TVal) -> JaggedDim:
        """The dim of a jagged tile: its loop's mask (below the longest lane's end) and the lanes'
        mask `index < lengths` over the dims of `lengths` (unit dims dropped) and its own."""
        b, dim = self.builder, tile.dim
        lanes = tuple(d for d in lengths.shape if d is not ONE)
        ends = self.reshape_to(lengths, lanes) if lanes != lengths.shape else lengths
        rank = len(lanes) + 1
        lane_mask = b.assign(f"{place(dim.index, [rank - 1], rank)} < {place(self.atom(ends), list(range(rank - 1)), rank)}",
                             "mask")
        mask = dim.mask or b.assign(f"{dim.index} < {tile.end}", "mask")
        return JaggedDim(dim.block_id, dim.size_expr, dim.index, mask, dim.numel_expr, dim.in_dot, lanes, lane_mask)

    def contains_dot(self, body: list[ast.stmt]) -> bool:
        names = {"dot", "matmul", "mm", "bmm", "addmm", "baddbmm"}
        for sub, _ in self.nodes_through_calls(body):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.MatMult):
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in names:
                return True
        return False

    # ------------------------------------------------------------------ if statements
    def if_statement(self, node: ast.If) -> None:
        cond = self.condition(node.test)
        if not isinstance(cond, TVal):
            self.statements(node.body if cond else node.orelse)
            return
        self.require_eager(cond, "an if condition")
        if len(cond.shape) > 1 or any(dim.size_expr != "1" for dim in cond.shape):  # a scalar, or one lane
            raise self.error(exc.ShapeMismatch, f"if condition must be a scalar, got shape {list(cond.shape)}", node.test)
        assigned = self.assigned_names(node.body + node.orelse)
        before = dict(self.scope)
        carried = self.carry(assigned)
        self.session.note_branch(self.open_device_loops)
        b = self.builder
        b.emit(f"if {cond.name}:")
        self.runtime_branches += 1
        with b.block():
            self.statements(node.body)
        if node.orelse:
            b.emit("else:")
            with b.block():
                self.statements(node.orelse)
        self.runtime_branches -= 1
        self.uncarry(carried)
        self.drop_inner_values(assigned, before, carried)

    def condition(self, node: ast.AST) -> Any:
        if self.session.is_static_condition(node, self.scope):
            return bool(self.session.eval_host(node))
        if isinstance(node, ast.BoolOp):
            # a compile-time operand that decides the whole `and` / `or` leaves no run-time branch
            decider = isinstance(node.op, ast.Or)
            for operand in node.values:
                if self.session.is_static_condition(operand, self.scope) and bool(self.session.eval_host(operand)) == decider:
                    return decider
        value = self.expr(node)
        if isinstance(value, HostScalar):
            return self.make(torch.bool, (), lambda a: f"({a[0]}) != 0", [value]) if value.dtype != torch.bool else self.make(torch.bool, (), lambda a: a[0], [value])
        if isinstance(value, TVal):
            return value
        return bool(value)

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.AST) -> Any:
        prev = self.current_node
        try:
            return self._expr(node)
        except exc.CompileError as err:
            raise err.with_location(self.session.location(node))
        finally:
            self.current_node = prev

    def _expr(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Call) and self.resolve_callee(node.func) in (zip, enumerate):
            return self.call(node)  # of sequences that may hold tensors, each passed as itself
        if self.session.is_host_evaluable(node, self.scope):
            if isinstance(node, ast.BinOp):  # `block_n // 2`, `block_n * 2`: sizes naming dims of its tiles
                size = self.block_size_arithmetic(node.op, self.session.eval_host(node.left), self.session.eval_host(node.right))
                if size is not None:
                    return size
            return self.session.host_value(node, self.builder)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.expr(node.value), node.attr, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            return self.unary_op(node.op, self.expr(node.operand))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            values = [self.expr(v) for v in node.values]
            op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
            out = values[0]
            for v in values[1:]:
                out = self.binary(op, out, v)
            return out
        if isinstance(node, ast.IfExp):
            if self.session.is_static_condition(node.test, self.scope):
                return self.expr(node.body if self.session.eval_host(node.test) else node.orelse)
            return self.where(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value)
            if isinstance(base, HostTensor):
                return self.load(base, self.index_list(node.slice), None, node)
            if isinstance(base, JaggedArgument):
                return self.nested_load(base, ast.unparse(node.value), self.index_list(node.slice), node)
            if isinstance(base, TVal):
                return self.subscript_value(base, node.slice)
            if isinstance(base, (tuple, list)):
                idx = self.expr(node.slice)
                return base[idx]
            raise self.error(exc.NotSupported, f"subscript of {type(base).__name__}", node)
        if isinstance(node, (ast.Tuple, ast.List)):
            values = [self.expr(e) for e in node.elts]
            return tuple(values) if isinstance(node, ast.Tuple) else values
        if isinstance(node, ast.Dict) and None not in node.keys:  # hl.inline_triton's named operands
            return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Slice):
            length = slice_length(node)
            if length is not None and not self.session.is_host_evaluable(node, self.scope):
                return DeviceSlice(self.expr(node.lower), self.expr(length))
            return slice(*(self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        raise self.error(exc.NotSupported, f"{type(node).__name__} expression in device code", node)

    def name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        value = self.session.host_name(node.id, self.builder)
        if inlinable(value):
            self.callable_reach(value, node)  # so that a device name bound to it reaches it the same way
        return value

    def resolve_callee(self, node: ast.AST) -> Any:
        """The object a callee expression names, when known without compiling it: a name's value, a
        host expression's, or an attribute of a module or class so named; else None."""
        if isinstance(node, ast.Name) and node.id in self.scope:
            return self.scope[node.id]
        if self.session.is_host_evaluable(node, self.scope):
            return self.session.eval_host(node)
        if isinstance(node, ast.Attribute):
            base = self.resolve_callee(node.value)
            if isinstance(base, (types.ModuleType, type)):
                return getattr(base, node.attr, None)
        return None

    def attribute(self, base: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(base, TileVal):
            return self.tile_attribute(base, attr, node)
        if isinstance(base, TVal):
            if attr == "T":
                return self.permute(base, list(reversed(range(len(base.shape)))))
            if attr == "dtype":
                return base.dtype
            if attr in ("shape",):
                raise self.error(exc.NotSupported, "the shape of a device value; use tile.block_size", node)
            return ("method", base, attr)
        if isinstance(base, HostTensor):
            return ("method", base, attr)
        try:
            return getattr(base, attr)
        except AttributeError:
            raise self.error(exc.NotSupported, f"attribute {attr!r} of {type(base).__name__}", node) from None

    def tile_attribute(self, tile: TileVal, attr: str, node: ast.AST) -> Any:
        b = self.builder
        dim = tile.dim
        if attr == "index":
            return TVal(torch.int32, (dim,), name=dim.index, at_least=tile.at_least)
        if attr == "begin":
            return TVal(torch.int32, (), name=tile.offset, at_least=tile.at_least)
        if attr == "end":
            return TVal(torch.int32, (), name=b.assign(f"tl.minimum({tile.offset} + {dim.size_expr}, {tile.end})", "end"),
                        at_least=tile.at_least)
        if attr == "block_size":  # a number, and as a size the tile's dim (times a power of two, a merged dim)
            return DimSize(dim.size_expr, self.dim_value(dim), torch.int32, dim=dim)
        if attr == "id":
            return TVal(torch.int32, (), name=b.assign(f"({tile.offset} - {tile.begin}) // {dim.size_expr}", "tid"), at_least=0)
        if attr == "count":
            return TVal(torch.int32, (), name=b.assign(f"tl.cdiv({tile.end} - {tile.begin}, {dim.size_expr})", "count"), at_least=0)
        raise self.error(exc.NotSupported, f"tile attribute .{attr}", node)

    def compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if isinstance(op, (ast.Is, ast.IsNot)):
                same = left is right
                part: Any = same if isinstance(op, ast.Is) else not same
            else:
                part = self.binary(op, left, right)
            result = part if result is None else self.binary(ast.BitAnd(), result, part)
            left = right
        return result

    # ------------------------------------------------------------------ calls
    def call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func) if not self.session.is_host_evaluable(node.func, self.scope) else self.session.eval_host(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in HOST_TENSOR_ALLOCATIONS:
            base = self.expr(node.func.value)  # `weight.new_zeros(...)`: the host tensor's method, not its meta one's
            if isinstance(base, HostTensor):
                callee = ("method", base, node.func.attr)
        args = [self.expr(a) for a in node.args if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(exc.NotSupported, "*args in a device call", node)
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if isinstance(callee, tuple) and len(callee) == 3 and callee[0] == "method":
            return self.method(callee[1], callee[2], args, kwargs, node)
        name = ast.unparse(node.func)
        if isinstance(getattr(callee, "__self__", None), JaggedArgument):
            raise self.error(exc.NotSupported, f"{callee.__name__} of a NestedTensor argument in device code; read its "
                             "sizes in host code (`longest = x.size(1)` before the loop)", node)
        try:
            handler = self.function_table().get(callee)
        except TypeError:  # an unhashable callee
            handler = None
        if handler is None:
            if inlinable(callee):
                return self.inline_call(callee, node, args, kwargs)
            raise self.error(exc.NotSupported, f"call to {name}(...) in device code", node)
        try:
            return handler(node, *args, **kwargs)
        except exc.Base:
            raise
        except TypeError as err:
            raise self.error(exc.NotSupported, f"call to {name}(...) in device code with these arguments: {err}",
                             node) from None
        except Exception as err:  # noqa: BLE001 - a handler's failure names the call it compiled
            raise self.error(exc.NotSupported, f"call to {name}(...) in device code failed: "
                             f"{type(err).__name__}: {err}", node) from err
