"""Gluon lowering: rewrites a kernel the device compiler emitted as Triton source into a
warp-specialized Gluon kernel with FlashAttention-3's schedule (notes/gluon_backend.md).

The kernel must have this *loop form*. One top-level program tile has a row block M (its first
tiled dimension); the other dimensions are single indices. Before its device loops it loads tiles
used as the first operand of dots ("resident": TMA into shared memory, once; a resident also read
outside dots is loaded into registers too). The device loops run over one key block N, one after
another, possibly inside scalar loops (an `hl.grid` over heads: `Outer`). Each has two kinds of dots:
- fresh dots read a resident tile and a tile loaded in the loop (transposed or not): [M, N] scores;
- accumulating dots read a register value ([M, N]) and a tile loaded in the loop into an
  accumulator carried by the loop ([M, D]), or a constant tile (`tl.full` in the loop, such as
  ones that sum the rows: "constants", filled into shared memory once per warpgroup).
Whole dims are D, D1, ... in order of appearance; accumulators of each width live in a layout of
their own (`o_layout`, `o1_layout`, ...).
Tiles loaded in the loops are read only by dots ("streamed": TMA through one ring in shared memory
per tile, fed by a loader partition). A vector along the key block loaded in every loop (the
backward's lse and delta columns) is copied by the loader too (cp.async, masked, into a ring of its
own: "row copies"). Other loads (row vectors, tiles read only elementwise) are pointer loads in the
consumers; a column vector loads one element per thread and moves to the dots' layout. With
`shared_operands` the accumulating dots read their register operand from a shared-memory tile per
warpgroup instead of registers (wgmma reads A from either). With `relative_masks` a comparison of
two tile indices (the causal mask) compares the bare column indices against the row indices less
the column offset (`_offset_and_index`).
A store of a [M, whole dim] tile, masked (if at all) by its indices' bounds, leaves by TMA through
shared memory: a resident tile's buffer of the same tile and dtype (on a persistent grid only with
`resident_stores`, the slot then released once the store has read it), else a buffer of its own.
The launcher builds the TMA descriptors (`sites`) and passes them as parameters.
Everything else (elementwise ops, row reductions, masks, stores) is rewritten statement by
statement with explicit layouts: scores in the fresh dots' wgmma layout, accumulators in the
accumulating dots', and row and column vectors in their slices, converted where a row vector meets
the other dot's layout.

Schedule: a loader partition (4 warps) issues the TMA copies and the row copies. The consumers are
`groups` warpgroups of M / groups rows each; they take turns issuing their dots (ping-pong), and each keeps
the next key tile's fresh dots in flight while it runs the statements between the dots. Each loop
is rotated: step j issues the fresh dots of tile j together with the accumulating dots of tile
j - 1, waits for the fresh ones only, runs the statements that do not read an accumulator, then
waits for the rest and runs the statements that do. On a persistent grid (the emitted kernel's body
inside a `for virtual_pid in tl.range(...)` tile loop) the partitions walk the program's tiles
together; the loader fills each tile's residents into one of two slots once the consumers released
it, so the next tile's arrive during this one. On a grid whose programs draw their tiles (`while
ticket < total:` around the body and the next `tl.atomic_add` draw) only the loader draws, and
hands each ticket to the consumers in shared memory beside the tile's residents. Anything outside
this form raises NotLowerable.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

ROW, COL = "row", "col"
VEC = ("vec", "")  # the layout context of a column vector's pointer load: one element per thread
PARTITION_WARPS = 4  # each partition's: a consumer warpgroup, the loader
VEC_LAYOUT = f"gl.BlockedLayout([1], [32], [{PARTITION_WARPS}], [0])"  # its layout, over a partition's warps
LOADER_THREADS = 32 * PARTITION_WARPS
LOADER_REGS = 24  # the loader's registers per thread (setmaxnreg's least)
CONSUMER_REGS = 240  # a consumer warpgroup's most (setmaxnreg's largest is 256; ptxas keeps some)
REGISTER_FILE = 65536  # 32-bit registers of an SM, which one CTA's warpgroups share


def consumer_registers(groups: int, maxnreg: int | None) -> int:
    """Registers per thread of each consumer warpgroup: under the kernel's per-thread cap (`maxnreg`,
    or the register file shared evenly by its groups + 1 warpgroups, rounded down to a multiple of
    8, as the compiler caps a kernel of that many threads) what the loader leaves, shared evenly and
    rounded down to setmaxnreg's multiple of 8, at most CONSUMER_REGS: 240 for one or two groups,
    160 for three."""
    launch_cap = REGISTER_FILE // (32 * PARTITION_WARPS * (groups + 1)) // 8 * 8
    cap = launch_cap if maxnreg is None else min(maxnreg, launch_cap)
    share = (cap * (groups + 1) - LOADER_REGS) // groups  # every warpgroup has the same threads
    return min(CONSUMER_REGS, share // 8 * 8)


class NotLowerable(Exception):
    """The kernel is not of the loop form; the message says what broke it."""


@dataclass
class Tma:
    """A load lowered to a TMA copy: `coords[d]` is the kernel text of its start along dim d."""
    name: str
    tensor: str
    coords: list
    block: list
    loop: int | None  # device loop index; None for a resident tile
    indices: tuple = ()  # each dim's index vector (a name), or None for a scalar start


@dataclass
class RowCopy:
    """A load in device loop `loop` of a vector along the key block, which the loader copies into a
    ring (cp.async) from `pointer` (the load's, `tensor + offsets`) where `mask` (or everywhere)
    and zero-fills elsewhere."""
    name: str
    tensor: str
    pointer: ast.expr
    mask: ast.expr | None
    eviction_policy: ast.expr | None
    loop: int


@dataclass
class Site:
    """A TMA descriptor the launcher builds and passes as kernel parameter `name`: of `tensor`, in
    tiles of `block` (kernel constexpr names, "ROWS" for one consumer warpgroup's rows, or "1"),
    over the tensor's sizes, except along the dims of `bounds`, which a store's mask clips at a
    kernel parameter: {dim: parameter}."""
    name: str
    tensor: str
    block: tuple
    bounds: tuple = ()


@dataclass
class TileDraws:
    """A grid whose programs draw their tiles (pid_type "persistent_dynamic"): `draw` (the line
    `ticket = tl.atomic_add(...)`) before `while test:`, which ends in the next draw, then `reset`;
    all Gluon text."""
    ticket: str
    draw: str
    test: str
    reset: str


@dataclass
class Dot:
    """A dot of a device loop body: statement `index`, result `target`, and the streamed tile it
    reads as B (`ring`, an index into the lowering's rings; `transposed` through a permute), or
    the constant tile `constant` (an index into the lowering's constants; `ring` None). A fresh dot
    (`acc` None) multiplies a resident tile `a` by it; an accumulating dot multiplies the register
    value `a` (an expression) into the loop-carried accumulator `acc`, starting from `acc_in` (an
    expression of it)."""
    index: int
    target: str
    a: ast.expr
    ring: int | None
    transposed: bool
    acc: str | None = None
    acc_in: ast.expr | None = None
    constant: int | None = None


@dataclass
class Constant:
    """A constant B operand: a [keys, `width`] tile of `value` in `dtype` (Gluon text), which each
    consumer warpgroup writes into its own shared-memory tile (`const_k`) before its first dot."""
    width: str
    value: str
    dtype: str


@dataclass
class Loop:
    """A device loop `for var in tl.range(begin, end, step)`: its `fresh` and accumulating (`accum`)
    dots, `loads[r]` the load of this loop that ring r streams and `rows[k]` the one that row
    copy ring k does."""
    var: str
    begin: str
    end: str
    step: str
    body: list
    fresh: list = field(default_factory=list)
    accum: list = field(default_factory=list)
    loads: list = field(default_factory=list)
    rows: list = field(default_factory=list)


@dataclass
class Outer:
    """A scalar loop around device loops (an `hl.grid`, e.g. over the query heads that share a kv
    head): `header` is its Gluon `for` line, `items` its statements and device loops in order."""
    header: str
    items: list


def _call(node: ast.AST) -> str | None:
    """`f` of a call `tl.f(...)`, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == "tl":
        return node.func.attr
    return None


def _names(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned(stmt: ast.stmt) -> set:
    """The names an assignment, or a branch of assignments, binds."""
    if isinstance(stmt, ast.If):
        return {name for inner in stmt.body + stmt.orelse for name in _assigned(inner)}
    return {stmt.targets[0].id} if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) else set()


def _read(stmt: ast.stmt) -> set:
    """The names a statement reads: an assignment's value, or a branch's test and statements."""
    if isinstance(stmt, ast.If):
        return _names(stmt.test) | {name for inner in stmt.body + stmt.orelse for name in _read(inner)}
    return _names(stmt.value)


def _gl(text: str) -> str:
    return re.sub(r"\btl\.", "gl.", text)


def _terms(node: ast.AST) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _terms(node.left) + _terms(node.right)
    return [node]


class Lowering:
    """One kernel's lowering. `source` is the emitted `def` (no decorator); `groups` the consumer
    warpgroups. `rows` and `keys` become the row and key blocks' constexpr names."""

    def __init__(self, source: str, groups: int, shared_operands: bool = False, relative_masks: bool = False,
                 resident_stores: bool = False):
        self.fn = ast.parse(source).body[0]
        if not isinstance(self.fn, ast.FunctionDef):
            raise NotLowerable("not a kernel function")
        self.groups = groups
        self.shared_operands = shared_operands  # accumulating dots read their register operand from shared memory
        self.relative_masks = relative_masks  # comparisons of two tile indices move one offset across
        self.resident_stores = resident_stores  # a persistent grid's stores staged in their tile's resident slot
        self.params = [a.arg for a in self.fn.args.args]
        self.constexprs = {a.arg for a in self.fn.args.args if a.annotation is not None}
        self.defs: dict[str, ast.expr] = {}      # inlined index, mask and broadcast views
        self.shapes: dict[str, tuple] = {}        # tensor name -> axes
        self.axis_of: dict[str, str] = {}         # block constexpr -> "M" / "N" / "D" / "D1" / ...
        self.tmas: dict[str, Tma] = {}
        self.stores: dict[int, tuple] = {}        # id(store statement) -> (Tma, bounds) when it leaves by TMA
        self.reg_loads: set = set()               # resident tiles also read outside dots: loaded to registers too
        self.row_copies: dict[str, RowCopy] = {}  # loop loads of key-block vectors the loader copies
        self.row_rings: list[str] = []            # the tensor each row copy ring holds
        self.loops: list[Loop] = []               # the device loops, in order
        self.prologue: list[ast.stmt] = []        # statements before the first loop
        self.nest: list = []                      # the loops, scalar loops around them and statements between
        self.epilogue: list[ast.stmt] = []        # statements after the last loop
        self.rings: list[Tma] = []                # each streamed tile's loads (those of the first loop)
        self.constants: list[Constant] = []       # the accumulating dots' constant B operands
        self.const_defs: set = set()              # the loop statements' names that define them
        self.widths: dict[str, str] = {}          # accumulator family ("O", "O1", ...) -> its width
        self.head: list[ast.stmt] = []            # statements before a persistent grid's tile loop
        self.tile_loop: str | None = None         # a persistent grid's tile loop header, as Gluon
        self.draw: TileDraws | None = None        # a grid drawing its tiles
        self._split()
        self.persistent = bool(self.tile_loop or self.draw)
        self.slots = 2 if self.persistent else 1  # resident slots: a persistent grid loads the next tile's early

    # ------------------------------------------------------------------ analysis
    def _split(self) -> None:
        body = self.fn.body
        outer = [s for s in body if isinstance(s, ast.For)]
        if len(outer) == 1 and outer[0] is body[-1] and any(isinstance(s, ast.For) for s in outer[0].body):
            self.tile_loop = self._tile_loop(outer[0])
            self.head = body[:-1]
            body = outer[0].body
        elif any(isinstance(s, ast.While) for s in body):
            self.head, body = self._tile_draws(body)
        for stmt in self.head:
            if not isinstance(stmt, ast.Assign):
                raise NotLowerable(f"statement {type(stmt).__name__} before the tile loop")
            self._note(stmt, None)
        items = self._items(body)
        nested = [i for i, item in enumerate(items) if isinstance(item, (Loop, Outer))]
        if not nested:
            raise NotLowerable("no device loop")
        self.prologue, self.nest, self.epilogue = items[:nested[0]], items[nested[0]:nested[-1] + 1], items[nested[-1] + 1:]
        self._uses()
        for stmt in self.prologue:
            self._note(stmt, None)
        rows = [v for k, v in self.axis_of.items() if v == "M"]
        if len(rows) != 1:
            raise NotLowerable("no row block")
        self.rows = next(k for k, v in self.axis_of.items() if v == "M")
        self._note_items(self.nest)
        for stmt in self.epilogue:
            self._note(stmt, None)
        steps = {loop.step for loop in self.loops}
        if len(steps) != 1:
            raise NotLowerable("loops over different key blocks")
        self.keys = steps.pop()
        for tma in self.tmas.values():
            if any(b not in ("1", self.rows, self.keys) and not self.axis_of.get(b, "").startswith("D") for b in tma.block):
                raise NotLowerable(f"load {tma.name}: a block that is not the row, key or whole dim")
        self.rings = [t for t in self.tmas.values() if t.loop == 0]
        for i, loop in enumerate(self.loops):
            self._check_loop(i, loop)
        self._match_row_copies()
        self.residents = [t for t in self.tmas.values() if t.loop is None]
        if not self.residents:
            raise NotLowerable("no tile loaded before the loops for the first dot")
        for dot in (d for loop in self.loops for d in loop.accum):
            family, width = self._family_of(dot), self._width(dot)
            if self.widths.setdefault(family, width) != width:
                raise NotLowerable(f"accumulating dots of {family} of different widths")
        if "O" not in self.widths:
            raise NotLowerable("no accumulator along the first whole dim")

    def _items(self, body: list) -> list:
        """The statements, device loops (Loop) and scalar loops around device loops (Outer) of a body."""
        items = []
        for stmt in body:
            if isinstance(stmt, ast.For) and any(isinstance(s, ast.For) for s in ast.walk(stmt) if s is not stmt):
                it = stmt.iter  # its keywords, Triton's pipelining hints, do not apply
                if _call(it) != "range" or not isinstance(stmt.target, ast.Name) or stmt.orelse:
                    raise NotLowerable("a loop around device loops is not `for x in tl.range(...)`")
                header = f"for {stmt.target.id} in range({', '.join(_gl(ast.unparse(a)) for a in it.args)}):"
                items.append(Outer(header, self._items(stmt.body)))
            elif isinstance(stmt, ast.For):
                self.loops.append(self._loop(stmt))
                items.append(self.loops[-1])
            elif isinstance(stmt, (ast.Assign, ast.Expr)):
                items.append(stmt)
            else:
                raise NotLowerable(f"statement {type(stmt).__name__} at top level")
        return items

    def _note_items(self, items: list) -> None:
        for item in items:
            if isinstance(item, Outer):
                self._note_items(item.items)
            elif isinstance(item, Loop):
                self.axis_of[item.step] = "N"
                for stmt in item.body:
                    self._note_branch(stmt, self.loops.index(item))
            else:
                self._note(item, None)

    def _uses(self) -> None:
        """Which names are read as dot operands (a permuted load counting as its load) and which
        elsewhere: a load read only by dots is a TMA copy, one read only elsewhere a pointer load."""
        stmts = [n for n in ast.walk(self.fn) if isinstance(n, (ast.Assign, ast.Expr))]
        permutes = {n.targets[0].id: n.value.args[0].id for n in stmts if isinstance(n, ast.Assign)
                    and _call(n.value) == "permute" and isinstance(n.value.args[0], ast.Name)}
        self.dot_uses, self.other_uses = set(), set()
        for n in stmts:
            target = n.targets[0].id if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) else None
            if target in permutes:
                continue
            if isinstance(n, ast.Assign) and _call(n.value) == "dot":
                for arg in n.value.args[:2]:
                    if isinstance(arg, ast.Name):
                        self.dot_uses.add(permutes.get(arg.id, arg.id))
                    else:
                        self.other_uses |= _names(arg)
                for keyword in n.value.keywords:
                    self.other_uses |= _names(keyword.value)
            else:
                self.other_uses |= _names(n.value)

    def _tile_loop(self, stmt: ast.For) -> str:
        """The header of a persistent grid's loop over its program's tiles (pid_type
        "persistent_*"): `for virtual_pid in tl.range(...)` around the program's whole body."""
        it = stmt.iter
        if _call(it) != "range" or it.keywords or not isinstance(stmt.target, ast.Name) or stmt.orelse:
            raise NotLowerable("tile loop is not `for x in tl.range(...)`")
        return f"for {stmt.target.id} in range({', '.join(_gl(ast.unparse(a)) for a in it.args)}):"

    def _tile_draws(self, body: list) -> tuple:
        """(head, tile body) of a grid whose programs draw their tiles (pid_type
        "persistent_dynamic"): `ticket = tl.atomic_add(counter, 1, ...)`, then `while ticket <
        total:` around the tile's statements and the next draw, then the counter's reset (`self.draw`)."""
        if len(body) < 3:
            raise NotLowerable("a tile draw without its loop and reset")
        draw, loop, reset = body[-3:]
        ticket = draw.targets[0].id if isinstance(draw, ast.Assign) and _call(draw.value) == "atomic_add" else None
        test = loop.test if isinstance(loop, ast.While) else None
        if ticket is None or not (isinstance(test, ast.Compare) and ast.unparse(test.left) == ticket) or loop.orelse \
                or not loop.body or ast.unparse(loop.body[-1]) != ast.unparse(draw) or not isinstance(reset, ast.If):
            raise NotLowerable("a while loop that is not the tile draws of pid_type persistent_dynamic")
        self.draw = TileDraws(ticket, _gl(ast.unparse(draw)), _gl(ast.unparse(test)), _gl(ast.unparse(reset)))
        return body[:-3], loop.body[:-1]

    def _loop(self, stmt: ast.For) -> Loop:
        it = stmt.iter
        if _call(it) != "range" or len(it.args) != 3 or not isinstance(stmt.target, ast.Name) or stmt.orelse:
            raise NotLowerable("device loop is not `for x in tl.range(begin, end, block)`")
        begin, end, step = (ast.unparse(a) for a in it.args)
        if step not in self.constexprs:
            raise NotLowerable("loop step is not a block size")
        return Loop(stmt.target.id, begin, end, step, list(stmt.body))

    def _note_branch(self, stmt: ast.stmt, loop: int) -> None:
        """`_note` for a device loop's statement, which may be a branch on a scalar (`if c:` with an
        optional `else:`) around elementwise assignments, such as a mask applied only to the tiles
        that need it. It stays a branch in each consumer step: loads, dots and stores stay outside."""
        if not isinstance(stmt, ast.If):
            return self._note(stmt, loop)
        if self.shape(stmt.test) != ():
            raise NotLowerable(f"a branch on a tensor: {ast.unparse(stmt.test)}")
        for inner in stmt.body + stmt.orelse:
            if isinstance(inner, ast.If):
                self._note_branch(inner, loop)
                continue
            if not isinstance(inner, ast.Assign) or any(_call(n) in ("load", "dot", "store", "atomic_add")
                                                        for n in ast.walk(inner)):
                raise NotLowerable(f"a branch around more than elementwise assignments: {ast.unparse(inner)}")
            self._note(inner, loop)

    def _note(self, stmt: ast.stmt, loop: int | None) -> None:
        """Record definitions: index vectors, masks and views (inlined at each use), TMA loads and
        the shapes of tensor values."""
        if isinstance(stmt, ast.Expr):
            if _call(stmt.value) != "store":
                raise NotLowerable(f"expression statement {ast.unparse(stmt)}")
            if loop is None:
                self._note_store(stmt)
            return
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            raise NotLowerable(f"assignment {ast.unparse(stmt)}")
        name, value = stmt.targets[0].id, stmt.value
        if self._is_index(value):
            self._note_axes(value, loop)
            self.defs[name] = value
            return
        if isinstance(value, ast.Subscript) and self._is_view(value):
            self.defs[name] = value
            self.shapes[name] = self.shape(value)
            return
        if _call(value) == "load" and name in self.dot_uses:
            self.tmas[name] = self._tma(name, value, loop)
            self.shapes[name] = tuple(self.axis_of.get(b, 1) if b != "1" else 1 for b in self.tmas[name].block
                                      if b != "1")
            if name in self.other_uses:
                if loop is not None:
                    raise NotLowerable(f"load {name}: a streamed tile also read outside dots")
                self.reg_loads.add(name)
            return
        if _call(value) == "load":  # read only outside dots: a row copy or a pointer load in the consumers
            self.shapes[name] = self.shape(value)
            copy = self._row_copy(name, value, loop)
            if copy is not None:
                self.row_copies[name] = copy
            return
        if _call(value) == "permute":
            src = value.args[0]
            if not isinstance(src, ast.Name) or src.id not in self.tmas or ast.unparse(value.args[1]) != "(1, 0)":
                raise NotLowerable(f"permute of something else than a loaded tile: {ast.unparse(value)}")
            self.defs[name] = value
            self.shapes[name] = tuple(reversed(self.shapes[src.id]))
            return
        if self._mentions_tensor(value):
            self.shapes[name] = self.shape(value)

    def _note_axes(self, value: ast.expr, loop: int | None) -> None:
        """Name the axis of each block an index vector spans: `offset + arange(0, B)` before the loops
        is the program's row block ("M"; one only), in a loop its key block ("N"); a bare
        `arange(0, R)` is a whole dim ("D", then "D1", "D2", ... for the other widths)."""
        if _call(value) == "arange":
            ranges = [value]
        elif isinstance(value, ast.BinOp) and _call(value.right) == "arange":
            ranges = [value.right]
        else:
            ranges = []
        for node in ranges:
            block = ast.unparse(node.args[1])
            if block == "1" or block in self.axis_of:
                continue
            if node is value:
                whole = sum(1 for a in self.axis_of.values() if a.startswith("D"))
                self.axis_of[block] = f"D{whole or ''}"
            elif loop is None:
                if "M" in self.axis_of.values():
                    raise NotLowerable("more than one tiled dimension in the program tile")
                self.axis_of[block] = "M"

    def _is_index(self, value: ast.expr) -> bool:
        """An index vector, a mask, or arithmetic of them with scalars."""
        has_arange = any(_call(n) == "arange" for n in ast.walk(value))
        names = _names(value) - {"tl"}
        uses_index = any(n in self.defs and n not in self.shapes for n in names)
        tensors = any(n in self.shapes or n in self.tmas for n in names)
        return (has_arange or uses_index) and not tensors and not any(
            _call(n) in ("load", "dot", "full") for n in ast.walk(value))

    @staticmethod
    def _is_view(value: ast.Subscript) -> bool:
        idx = value.slice
        return isinstance(idx, ast.Tuple) and any(isinstance(e, ast.Constant) and e.value is None for e in idx.elts)

    def _mentions_tensor(self, value: ast.expr) -> bool:
        return any(n in self.shapes or n in self.tmas or n in self.defs for n in _names(value)) or any(
            _call(n) in ("full", "dot", "arange") for n in ast.walk(value))

    def _row_copy(self, name: str, call: ast.Call, loop: int | None) -> RowCopy | None:
        """The load as a row copy, if it is one: in a device loop, a vector along the key block at
        `tensor + offsets`, 0 (or nothing) where masked. As a pointer load in the consumers it is
        spread over as many registers per thread as the dots' layout has columns, or moved there
        through shared memory: 21-38% of the dk/dv kernel's time (H100, 2026-11-27). TMA cannot
        copy it: a box must start 16 bytes aligned along its last dim, and the loops over queries
        start anywhere (an illegal instruction at Sq 65, Sk 1, causal)."""
        keywords = {k.arg: k.value for k in call.keywords}
        ptr, other = call.args[0], keywords.get("other")
        if loop is None or self.shape(call) != ("N",) or set(keywords) - {"mask", "other", "eviction_policy"}:
            return None
        if other is not None and not (isinstance(other, ast.Constant) and other.value == 0):
            return None
        if not (isinstance(ptr, ast.BinOp) and isinstance(ptr.op, ast.Add) and isinstance(ptr.left, ast.Name)
                and ptr.left.id in self.params):
            return None
        return RowCopy(name, ptr.left.id, ptr, keywords.get("mask"), keywords.get("eviction_policy"), loop)

    def _match_row_copies(self) -> None:
        """Keep the row copies that every loop makes once of the same tensor (the rings advance
        together) and whose pointer and mask the loader can compute (no value of a loop body); the
        others stay pointer loads in the consumers."""
        local = {name for loop in self.loops for s in loop.body for name in _assigned(s)}
        per_loop: list[dict] = [{} for _ in self.loops]
        for copy in self.row_copies.values():
            reads = self._reads(copy.pointer) | (self._reads(copy.mask) if copy.mask is not None else set())
            if not reads & (local | set(self.shapes)):
                per_loop[copy.loop].setdefault(copy.tensor, []).append(copy.name)
        self.row_rings = [t for t in per_loop[0] if all(len(loads.get(t, [])) == 1 for loads in per_loop)]
        for i, loop in enumerate(self.loops):
            loop.rows = [per_loop[i][t][0] for t in self.row_rings]
        kept = {name for loop in self.loops for name in loop.rows}
        self.row_copies = {name: copy for name, copy in self.row_copies.items() if name in kept}

    def _reads(self, node: ast.expr) -> set:
        """The names `node` reads, through the index definitions it inlines."""
        names, todo = set(), list(_names(node))
        while todo:
            name = todo.pop()
            if name in self.defs and name not in names:
                todo += _names(self.defs[name])
            names.add(name)
        return names - set(self.defs)

    def _tma(self, name: str, call: ast.Call, loop: int | None) -> Tma:
        ptr = call.args[0]
        if not (isinstance(ptr, ast.BinOp) and isinstance(ptr.op, ast.Add) and isinstance(ptr.left, ast.Name)):
            raise NotLowerable(f"load {name}: pointer is not `tensor + offsets`")
        tensor = ptr.left.id
        dims: dict[int, tuple] = {}
        indices: dict[int, str | None] = {}
        for term in _terms(ptr.right):
            if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult) and isinstance(term.right, ast.Name)):
                raise NotLowerable(f"load {name}: offset term {ast.unparse(term)}")
            match = re.fullmatch(re.escape(tensor) + r"_stride_(\d+)", term.right.id)
            if not match:
                raise NotLowerable(f"load {name}: offset term {ast.unparse(term)} is not index * stride")
            dims[int(match.group(1))] = self._coord(name, term.left)
            index = term.left.value if isinstance(term.left, ast.Subscript) else term.left
            indices[int(match.group(1))] = index.id if isinstance(index, ast.Name) and index.id in self.defs else None
        if sorted(dims) != list(range(len(dims))):
            raise NotLowerable(f"load {name}: not every dim of {tensor} indexed")
        coords = [dims[d][0] for d in sorted(dims)]
        block = [dims[d][1] for d in sorted(dims)]
        if len(block) < 2 or block[-1] == "1" or block[-2] == "1" or any(b != "1" for b in block[:-2]):
            raise NotLowerable(f"load {name}: not a 2-D tile of the last two dims")
        return Tma(name, tensor, coords, block, loop, tuple(indices[d] for d in sorted(dims)))

    def _note_store(self, stmt: ast.Expr) -> None:
        """Record a store after the loops that can leave by TMA: a [M, whole dim] tile at
        `tensor + index * stride` offsets, unmasked or masked by `index < parameter` bounds of its
        own indices (the descriptor clips there). Other stores stay pointer stores."""
        call = stmt.value
        if self.shape(call.args[1]) != ("M", "D") or len(call.args) != 2:
            return
        try:
            tma = self._tma(f"store_{len(self.stores)}", call, None)
        except NotLowerable:
            return
        mask = next((k.value for k in call.keywords if k.arg == "mask"), None)
        bounds = {} if mask is None else self._bounds(mask, tma)
        if bounds is not None and [k.arg for k in call.keywords] in ([], ["mask"]):
            self.stores[id(stmt)] = (tma, tuple(sorted(bounds.items())))

    def _bounds(self, mask: ast.expr, tma: Tma) -> dict | None:
        """{dim: parameter} of a mask that is a conjunction of `index < parameter` over the store's
        own index vectors, else None."""
        if isinstance(mask, ast.Subscript) and self._is_view(mask):
            mask = mask.value
        if isinstance(mask, ast.Name) and mask.id in self.defs:
            mask = self.defs[mask.id]
        if isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd):
            left, right = self._bounds(mask.left, tma), self._bounds(mask.right, tma)
            return None if left is None or right is None else {**left, **right}
        if not (isinstance(mask, ast.Compare) and len(mask.ops) == 1 and isinstance(mask.ops[0], ast.Lt)
                and isinstance(mask.left, ast.Name) and isinstance(mask.comparators[0], ast.Name)):
            return None
        index, bound = mask.left.id, mask.comparators[0].id
        if index not in tma.indices or bound not in self.params or bound in self.constexprs:
            return None
        return {tma.indices.index(index): bound}

    def _coord(self, load: str, index: ast.expr) -> tuple:
        """(start, block) of one dim of a load from its index expression."""
        if isinstance(index, ast.Subscript) and self._is_view(index):
            index = index.value
        if isinstance(index, ast.Name) and index.id in self.defs:
            value = self.defs[index.id]
            if _call(value) == "arange":
                return "0", ast.unparse(value.args[1])
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and _call(value.right) == "arange":
                return ast.unparse(value.left), ast.unparse(value.right.args[1])
            raise NotLowerable(f"load {load}: index {index.id} is not offset + arange")
        if self._mentions_tensor(index):
            raise NotLowerable(f"load {load}: a tensor index")
        return ast.unparse(index), "1"

    def _check_loop(self, i: int, loop: Loop) -> None:
        """Sort the loop's dots into fresh and accumulating ones (`Dot`) and match its streamed loads
        to the rings: every loop streams the same tiles, each read only by dots."""
        loop.loads = [None] * len(self.rings)
        for name, tma in self.tmas.items():
            if tma.loop != i:
                continue
            ring = next((r for r, t in enumerate(self.rings) if (t.tensor, t.block) == (tma.tensor, tma.block)), None)
            if ring is None or loop.loads[ring] is not None:
                raise NotLowerable(f"loop {i}: the loops stream different tiles")
            loop.loads[ring] = name
        if None in loop.loads:
            raise NotLowerable(f"loop {i}: the loops stream different tiles")
        loop.fresh, loop.accum = [], []
        results = {}
        for k, stmt in enumerate(loop.body):
            if not (isinstance(stmt, ast.Assign) and _call(stmt.value) == "dot"):
                continue
            call, target = stmt.value, stmt.targets[0].id
            if len(call.args) != 2:
                raise NotLowerable(f"loop {i}: dot {ast.unparse(call)}")
            a, b = call.args
            keywords = [kw.arg for kw in call.keywords]
            constant = self._constant_of(b, loop) if keywords == ["acc"] else None
            ring, transposed = (None, False) if constant is not None else self._ring_of(b, loop)
            if not keywords and self._resident(a):
                dot = Dot(k, target, a, ring, transposed)
                if self.family(self.shape(call)) != "S":
                    raise NotLowerable(f"loop {i}: the fresh dot {target} is not [rows, keys]")
                loop.fresh.append(dot)
            elif keywords == ["acc"] and not self._resident(a):
                dot = Dot(k, target, a, ring, transposed, acc_in=call.keywords[0].value, constant=constant)
                if self.family(self.shape(call)) == "S" or self.family(self.shape(a)) != "S":
                    raise NotLowerable(f"loop {i}: the accumulating dot {target} is not [rows, keys] x [keys, dim]")
                loop.accum.append(dot)
            else:
                raise NotLowerable(f"loop {i}: dot {target} neither reads a resident tile nor accumulates")
            results[target] = dot
        if not loop.fresh or not loop.accum:
            raise NotLowerable(f"loop {i}: not a fresh dot and an accumulating dot")
        for stmt in loop.body:  # each accumulating dot's result is renamed to its accumulator, and read nowhere else
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in results:
                dot = results[stmt.value.id]
                if dot.acc_in is None:  # a fresh dot's copy (a name a branch reassigns) is elementwise code
                    continue
                if dot.acc is not None:
                    raise NotLowerable(f"loop {i}: dot {dot.target} is read outside the dots")
                dot.acc = stmt.targets[0].id
        if any(d.acc is None for d in loop.accum):
            raise NotLowerable(f"loop {i}: an accumulating dot's result is not the carried accumulator")

    def _ring_of(self, node: ast.expr, loop: Loop) -> tuple:
        """(ring, transposed) of a dot's B operand: a streamed tile of `loop`, or its permute."""
        transposed = isinstance(node, ast.Name) and node.id in self.defs and _call(self.defs[node.id]) == "permute"
        if transposed:
            node = self.defs[node.id].args[0]
        if not (isinstance(node, ast.Name) and node.id in loop.loads):
            raise NotLowerable(f"a dot's B operand {ast.unparse(node)} is not a tile streamed by its loop")
        return loop.loads.index(node.id), transposed

    def _constant_of(self, node: ast.expr, loop: Loop) -> int | None:
        """The index into `self.constants` of a dot's B operand that the loop fills with a constant,
        `tl.full([keys, width], value, dtype)` (maybe cast), read by dots only; else None."""
        if not isinstance(node, ast.Name) or node.id in self.other_uses:
            return None
        value = next((s.value for s in loop.body if isinstance(s, ast.Assign) and s.targets[0].id == node.id), None)
        dtype = None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
            dtype, value = _gl(ast.unparse(value.args[0])), value.func.value
        if _call(value) != "full" or not isinstance(value.args[1], ast.Constant):
            return None
        dims = [ast.unparse(e) for e in value.args[0].elts]
        if len(dims) != 2 or dims[0] != loop.step or not self.axis_of.get(dims[1], "").startswith("D"):
            return None
        constant = Constant(dims[1], repr(value.args[1].value), dtype or _gl(ast.unparse(value.args[2])))
        if constant not in self.constants:
            self.constants.append(constant)
        self.const_defs.add(node.id)
        return self.constants.index(constant)

    def _family_of(self, dot: Dot) -> str:
        """The layout family of an accumulating dot's result ("O", "O1", ...)."""
        return self.family(self.shape(ast.Name(dot.target)))

    def _width(self, dot: Dot) -> str:
        """The width of an accumulating dot's result: its streamed tile's last dim (first, transposed),
        or its constant's."""
        if dot.constant is not None:
            return self.constants[dot.constant].width
        block = [b for b in self.rings[dot.ring].block if b != "1"]
        return block[0] if dot.transposed else block[-1]

    def _resident(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.tmas and self.tmas[node.id].loop is None

    # ------------------------------------------------------------------ shapes and layouts
    def shape(self, node: ast.expr) -> tuple:
        """Axes of a value: a tuple of "M" / "N" / "D" / 1; () for scalars."""
        if isinstance(node, ast.Name):
            if node.id in self.shapes:
                return self.shapes[node.id]
            if node.id in self.defs:
                return self.shape(self.defs[node.id])
            return ()
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Subscript) and self._is_view(node):
            inner = list(self.shape(node.value))
            out = []
            for e in node.slice.elts:
                out.append(1 if isinstance(e, ast.Constant) else inner.pop(0))
            return tuple(out)
        if isinstance(node, (ast.BinOp, ast.Compare, ast.BoolOp)):
            parts = [node.left, node.right] if isinstance(node, ast.BinOp) else \
                [node.left, *node.comparators] if isinstance(node, ast.Compare) else node.values
            return self._broadcast([self.shape(p) for p in parts])
        if isinstance(node, ast.UnaryOp):
            return self.shape(node.operand)
        if isinstance(node, ast.Call):
            f = _call(node)
            if f == "arange":
                block = ast.unparse(node.args[1])
                return (self.axis_of.get(block, 1),) if block != "1" else (1,)
            if f == "full":
                return tuple(self.axis_of.get(ast.unparse(e), 1) for e in node.args[0].elts)
            if f in ("max", "sum", "min", "reduce"):
                inner = list(self.shape(node.args[0]))
                del inner[int(ast.unparse(node.args[1]))]
                return tuple(inner)
            if f == "dot":
                return (self.shape(node.args[0])[0], self.shape(node.args[1])[1])
            if f == "permute":
                return tuple(reversed(self.shape(node.args[0])))
            if f == "load":
                return self.shape(node.args[0])
            if f in ("maximum", "minimum", "where", "exp2", "log2", "exp", "log", "abs", "sqrt", "fma"):
                return self._broadcast([self.shape(a) for a in node.args])
            if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
                return self.shape(node.func.value)
            if isinstance(node.func, ast.Name) and node.func.id == "float":
                return ()
            if f in ("cdiv", "program_id", "num_programs"):
                return ()
        raise NotLowerable(f"unsupported expression {ast.unparse(node)}")

    @staticmethod
    def _broadcast(shapes: list) -> tuple:
        rank = max((len(s) for s in shapes), default=0)
        out = [1] * rank
        for s in shapes:
            if not s:
                continue
            if len(s) != rank:
                raise NotLowerable("broadcast across ranks")
            out = [b if a == 1 else a for a, b in zip(s, out)]
        return tuple(out)

    @staticmethod
    def family(shape: tuple) -> str:
        """The dot layout a 2-D value lives in: scores ("S") carry the key axis, the rest the
        accumulators' of their whole dim ("O" for D, "O1" for D1, ...)."""
        if "N" in shape:
            return "S"
        whole = next((a for a in shape if isinstance(a, str) and a.startswith("D")), "D")
        return "O" + whole[1:]

    def natural(self, shape: tuple):
        """The layout context a value of `shape` is emitted in."""
        if len(shape) == 2:
            return self.family(shape)
        if len(shape) == 1:
            return (ROW, "S") if shape[0] == "M" else (COL, "S") if shape[0] == "N" else (COL, self.family(shape))
        return None

    @staticmethod
    def layout(ctx) -> str:
        if isinstance(ctx, str):
            return f"{ctx.lower()}_layout"
        if ctx == VEC:
            return "vec_layout"
        kind, fam = ctx
        return f"gl.SliceLayout({1 if kind == ROW else 0}, {fam.lower()}_layout)"

    # ------------------------------------------------------------------ emission of expressions
    def emit(self, node: ast.expr, ctx) -> str:
        """Kernel text of `node` in layout context `ctx` (None: scalar)."""
        if isinstance(node, ast.Name):
            name = node.id
            if node.id in self.defs:
                return f"({self.emit(self.defs[node.id], ctx)})"
            shape = self.shapes.get(node.id, ())
            if not shape or ctx is None:
                return name
            have = self.natural(shape)
            if len(shape) == 1 and have != ctx:
                return f"gl.convert_layout({name}, {self.layout(ctx)})"
            return name
        if isinstance(node, ast.Constant):
            return repr(node.value)
        if isinstance(node, ast.Subscript) and self._is_view(node):
            elts = node.slice.elts
            if len(elts) != 2 or not isinstance(ctx, str):
                raise NotLowerable(f"view {ast.unparse(node)}")
            inner = (ROW, ctx) if isinstance(elts[1], ast.Constant) else (COL, ctx)
            index = ", ".join("None" if isinstance(e, ast.Constant) else ":" for e in elts)
            return f"{self.emit(node.value, inner)}[{index}]"
        if isinstance(node, ast.BinOp):
            op = ast.unparse(ast.BinOp(ast.Name("a"), node.op, ast.Name("b")))[2:-2]
            return f"({self.emit(node.left, ctx)} {op} {self.emit(node.right, ctx)})"
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise NotLowerable("chained comparison")
            op = ast.unparse(ast.Compare(ast.Name("a"), node.ops, [ast.Name("b")]))[2:-2]
            left, right = node.left, node.comparators[0]
            sides = (self._offset_and_index(left), self._offset_and_index(right)) if self.relative_masks else (None, None)
            if None not in sides:  # the column side bare: o1 + i OP o2 + j -> i OP (o2 + j) - o1, or back
                if self._is_column(left):
                    left, right = sides[0][1], ast.BinOp(right, ast.Sub(), sides[0][0])
                elif self._is_column(right):
                    left, right = ast.BinOp(left, ast.Sub(), sides[1][0]), sides[1][1]
            return f"({self.emit(left, ctx)} {op} {self.emit(right, ctx)})"
        if isinstance(node, ast.UnaryOp):
            op = ast.unparse(ast.UnaryOp(node.op, ast.Name("a")))[:-1]
            return f"({op}{self.emit(node.operand, ctx)})"
        if isinstance(node, ast.Call):
            return self._emit_call(node, ctx)
        raise NotLowerable(f"unsupported expression {ast.unparse(node)}")

    def _offset_and_index(self, node: ast.expr) -> tuple | None:
        """(offset, index) where `node` is a scalar offset plus an index vector (through inlined
        index names and broadcast views), else None. A comparison of two such sides (a 2-D mask
        such as the causal one) moves the offset of its column side (`x[None, :]`) across: the
        column indices left alone are the same constants in each thread's registers for every tile
        (a thread holds many columns and few rows), so ptxas compares them against one value per
        row instead of building each element's index first. In the causal
        forward's diagonal tile (D128, two consumers) that is 1,344 fewer SASS instructions of
        16,416. Exact for the int32 tile indices: both sides stay within the offsets' range.
        Only with `relative_masks` (a per-kernel knob): on the H100 (2026-11-28) it ran the causal
        forward's table entries 0.99-1.055x and the causal backward's 0.955-1.03x. Bound masks (an
        index against a scalar) keep their form: moving their offset measured 0.967x on the
        non-causal forward, where only those changed."""
        if isinstance(node, ast.Name) and node.id in self.defs and node.id not in self.shapes:
            return self._offset_and_index(self.defs[node.id])
        if isinstance(node, ast.Subscript) and self._is_view(node):
            inner = self._offset_and_index(node.value)
            return None if inner is None else (inner[0], ast.Subscript(inner[1], node.slice, ast.Load()))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for offset, index in ((node.left, node.right), (node.right, node.left)):
                if self.shape(offset) == () and self.shape(index) != () and self._is_index(index) \
                        and not any(_call(n) == "load" for n in ast.walk(offset)):
                    return offset, index
        return None

    def _is_column(self, node: ast.expr) -> bool:
        """Whether `node` (through inlined names) is a vector viewed along the last axis, `x[None, :]`."""
        while isinstance(node, ast.Name) and node.id in self.defs and node.id not in self.shapes:
            node = self.defs[node.id]
        return isinstance(node, ast.Subscript) and self._is_view(node) and len(node.slice.elts) == 2 and \
            isinstance(node.slice.elts[0], ast.Constant) and not isinstance(node.slice.elts[1], ast.Constant)

    def _emit_call(self, node: ast.Call, ctx) -> str:
        f = _call(node)
        if f == "arange":
            block = ast.unparse(node.args[1])
            if block == self.rows:  # this warpgroup's rows of the program's row block
                return f"(WG * ROWS + gl.arange(0, ROWS, {self.layout(ctx)}))"
            return f"gl.arange(0, {block}, {self.layout(ctx)})"
        if f == "full":
            dims = ", ".join("ROWS" if ast.unparse(e) == self.rows else ast.unparse(e) for e in node.args[0].elts)
            return f"gl.full([{dims}], {ast.unparse(node.args[1])}, {_gl(ast.unparse(node.args[2]))}, {self.layout(ctx)})"
        if f in ("max", "sum", "min", "reduce"):
            inner = self.shape(node.args[0])
            fam = self.natural(inner)
            axis = int(ast.unparse(node.args[1]))
            combine = "".join(f", {ast.unparse(a)}" for a in node.args[2:])  # tl.reduce's @triton.jit combine function
            text = f"gl.{f}({self.emit(node.args[0], fam)}, {axis}{combine})"
            have = (ROW if axis == 1 else COL, fam)
            return text if ctx is None or have == ctx else f"gl.convert_layout({text}, {self.layout(ctx)})"
        if f in ("maximum", "minimum", "where", "exp2", "log2", "exp", "log", "abs", "sqrt", "fma"):
            keywords = [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords]  # maximum's propagate_nan
            return f"gl.{f}({', '.join([self.emit(a, ctx) for a in node.args] + keywords)})"
        if f in ("cdiv", "program_id", "num_programs"):
            return _gl(ast.unparse(node))
        if f == "load":
            keywords = {k.arg: k.value for k in node.keywords}
            if set(keywords) - {"mask", "other", "eviction_policy"}:
                raise NotLowerable(f"load {ast.unparse(node)}")
            # a column vector in a dot's layout is spread over each thread's columns (16 of 64 in
            # wgmma's): its pointers and mask would hold as many registers per thread, kept across
            # the loop (the dk/dv kernel's lse and delta spilled). It loads one element per thread
            # and moves to the dot's layout through shared memory.
            spread = isinstance(ctx, tuple) and ctx[0] == COL
            at = VEC if spread else ctx
            text = f"gl.load({self.emit(node.args[0], at)}"
            text += f", mask={self.emit(keywords['mask'], at)}" if "mask" in keywords else ""
            text += f", other={self.emit(keywords['other'], None)}" if "other" in keywords else ""
            text += f", eviction_policy={ast.unparse(keywords['eviction_policy'])}" if "eviction_policy" in keywords else ""
            return f"gl.convert_layout({text}), {self.layout(ctx)})" if spread else text + ")"
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return f"{self.emit(node.func.value, ctx)}.to({_gl(ast.unparse(node.args[0]))})"
        if isinstance(node.func, ast.Name) and node.func.id == "float":
            return ast.unparse(node)
        raise NotLowerable(f"unsupported call {ast.unparse(node)}")

    def statement(self, stmt: ast.stmt) -> list:
        """Kernel lines of one consumer statement (index definitions and views are inlined)."""
        if isinstance(stmt, ast.Expr):
            if id(stmt) in self.stores:
                return self._tma_store(stmt)
            return [self._store(stmt.value)]
        if isinstance(stmt, ast.If):
            body = [line for inner in stmt.body for line in self.statement(inner)]
            orelse = [line for inner in stmt.orelse for line in self.statement(inner)]
            if not body and not orelse:
                return []
            lines = [f"if {self.emit(stmt.test, None)}:"] + ["    " + line for line in body or ["pass"]]
            return lines + (["else:"] + ["    " + line for line in orelse] if orelse else [])
        name = stmt.targets[0].id
        if name in self.defs or (name in self.tmas and name not in self.reg_loads):
            return []
        shape = self.shapes.get(name)
        if name in self.row_copies:  # its ring's slot of this step (waited for with the dots' tiles)
            ring = self.row_rings.index(self.row_copies[name].tensor)
            return [f"{name} = row_{ring}.index(slot).load({self.layout(self.natural(shape))})"]
        if shape is None:
            return [f"{name} = {_gl(ast.unparse(stmt.value))}"]
        return [f"{name} = {self.emit(stmt.value, self.natural(shape))}"]

    def _tma_store(self, stmt: ast.Expr) -> list:
        """This warpgroup's rows of a [M, whole dim] tile, out through shared memory by TMA; the
        descriptor clips rows and columns past the tensor's sizes or the mask's bounds. The copy
        runs on while the warpgroup goes on: the buffer is written again only after it is done. A
        store staged in a resident tile's buffer takes this warpgroup's piece of the tile's slot."""
        tma, _ = self.stores[id(stmt)]
        piece = "rslot * GROUPS + WG" if tma.name in self.slot_stores else "WG"
        buffer = f"{self.store_smem[tma.name]}.index({piece})"
        value = self.emit(stmt.value.args[1], "O")
        return ["tma.store_wait(0)", f"{self._view(buffer, tma)}.store({value})", "fence_async_shared()",
                f"tma.async_copy_shared_to_global({self.site(tma)}, {self._coords(tma, 'WG * ROWS')}, {buffer})"]

    def _store(self, call: ast.Call) -> str:
        ptr, value = call.args[:2]
        shape = self.shape(value)
        ctx = self.natural(shape)
        mask = next((k.value for k in call.keywords if k.arg == "mask"), None)
        text = f"gl.store({self.emit(ptr, ctx)}, {self.emit(value, ctx)}"
        return text + (f", mask={self.emit(mask, ctx)})" if mask is not None else ")")

    # ------------------------------------------------------------------ the loop schedule
    def scalar_lines(self, stmts: list) -> list:
        """The scalar statements of `stmts` (program ids, offsets, loop bounds), as Gluon."""
        return [f"{s.targets[0].id} = {_gl(ast.unparse(s.value))}" for s in stmts if isinstance(s, ast.Assign)
                and s.targets[0].id not in self.shapes and s.targets[0].id not in self.defs
                and s.targets[0].id not in self.tmas]

    def parts(self, loop: Loop) -> tuple:
        """(a_part, acc_part, renames) of a loop body, besides its dots, its loads for the dots,
        index definitions and the renames of the accumulating dots' results. Statements that read an
        accumulator (directly or through each other) form acc_part; renames of values the body read
        before (loop-carried, like the running row max) come last; the rest is a_part, which runs
        while the accumulating dots are in flight and computes their register operands."""
        skipped = {d.index for d in loop.fresh + loop.accum}
        accs = {d.acc for d in loop.accum}
        results = {d.target for d in loop.accum}
        dot_of = {d.acc: d.index for d in loop.accum}
        a_part, acc_part, renames = [], [], []
        read, reads_acc = set(), set()
        for k, stmt in enumerate(loop.body):
            if isinstance(stmt, ast.Expr):
                raise NotLowerable("a store in a device loop")
            targets, reads = _assigned(stmt), _read(stmt)
            if k in skipped or (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)
                                and stmt.value.id in results) or targets & self.const_defs:
                read |= reads
                continue
            if any(k > dot_of[acc] for acc in targets & accs):
                # the rotated schedule issues a tile's accumulating dots in the next step, so an
                # accumulator changes only before them (as the next tile's input)
                raise NotLowerable(f"an accumulator is assigned after its dot: {ast.unparse(stmt)}")
            if isinstance(stmt, ast.Assign) and (targets & set(self.defs) or targets & set(self.tmas)):
                if reads & (accs | reads_acc):  # a view (inlined where read) of what waits for an accumulator
                    reads_acc |= targets
                continue
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and targets & read:
                renames.append(stmt)
                continue
            read |= reads
            if reads & (accs | reads_acc):
                reads_acc |= targets
                acc_part.append(stmt)
            else:
                a_part.append(stmt)
        for dot in loop.accum:
            if _names(dot.a) & reads_acc:
                raise NotLowerable(f"the register operand of {dot.target} reads an accumulator")
        return a_part, acc_part, renames

    # ------------------------------------------------------------------ rendering
    def _block(self, tma: Tma) -> tuple:
        return tuple("ROWS" if b == self.rows else b for b in tma.block)

    def sites(self) -> list:
        """The TMA descriptors the launcher builds, one per tensor, tile and bounds, in first-use
        order: the loads', then the stores'. The caller may rename them (`Site.name`) before
        `render`."""
        if not hasattr(self, "_sites"):
            found: dict = {}
            self._site_key = {}
            for tma, bounds in [(t, ()) for t in self.tmas.values()] + list(self.stores.values()):
                key = (tma.tensor, self._block(tma), bounds)
                if key not in found:
                    found[key] = Site(f"{tma.tensor}_desc_{len(found)}", *key)
                self._site_key[tma.name] = key
            self._sites = found
        return list(self._sites.values())

    def site(self, tma: Tma) -> str:
        self.sites()
        return self._sites[self._site_key[tma.name]].name

    def render(self, name: str, params: list, dtypes: dict) -> str:
        """Gluon source defining kernel `name` and its two partition functions. `params`: the
        kernel's (parameter, is constexpr) in signature order: the emitted kernel's parameters plus
        the `sites()` descriptors and the constexprs GROUPS, STAGES and CONSUMER_REGS. `dtypes`:
        each tensor parameter's dtype (a store reuses a resident tile's shared memory when its dtype
        and tile match: on a one-tile grid, or on a persistent one with `resident_stores`, where
        the loader fills the slot again only once the store has read it; else a persistent grid
        loads the next tile's residents while the store leaves from a buffer of its own)."""
        residents = self.residents
        self.store_smem = {}  # a store's Tma name -> its shared-memory buffer; those to allocate
        allocated, free = [], list(residents) if self.resident_stores or not self.persistent else []
        for tma, _ in self.stores.values():
            reused = next((r for r in free if self._block(r) == self._block(tma)
                           and dtypes.get(r.tensor) == dtypes.get(tma.tensor)), None)
            if reused is None:
                allocated.append(tma)
            else:
                free.remove(reused)
            self.store_smem[tma.name] = f"{(reused or tma).name}_smem"
        self.allocated_stores = allocated
        # a persistent grid's stores staged in their tile's slot, which is released once they read it
        self.slot_stores = {t.name for t, _ in self.stores.values() if self.persistent and t not in allocated}
        smem = [f"{r.name}_smem" for r in residents] + [self.store_smem[t.name] for t in allocated]
        smem += [f"ring_{r}" for r in range(len(self.rings))] + self._operand_buffers()
        smem += [f"const_{k}" for k in range(len(self.constants))]
        smem += [f"row_{k}" for k in range(len(self.row_rings))]
        bars = ["resident_bar", "resident_empty"] + [f"{ring}_{kind}" for ring in self._ring_names()
                                                     for kind in ("ready", "empty")] + ["turn"]
        bars += ["tile_ids"] if self.draw else []
        shared = ", ".join(smem + bars)
        sig = ", ".join(f"{p}: gl.constexpr" if constexpr else p for p, constexpr in params)
        args = ", ".join(p for p, _ in params)
        out = [self._loader(name, sig, shared), self._consumer(name, sig, shared),
               self._kernel(name, sig, args, shared, residents)]
        return "\n\n\n".join(out) + "\n"

    def _ring_names(self) -> list:
        """The rings, each a buffer of STAGES slots with a ready and an empty barrier per slot: the
        streamed tiles' (`ring_r`), then the row copies' (`row_k`)."""
        return [f"ring_{r}" for r in range(len(self.rings))] + [f"row_{k}" for k in range(len(self.row_rings))]

    def _operand_buffers(self) -> list:
        """The shared-memory buffers of the accumulating dots' register operands (one per dot of a
        loop, each warpgroup its own tile) when they are read from there."""
        if not self.shared_operands:
            return []
        return [f"operand_{i}" for i in range(max(len(loop.accum) for loop in self.loops))]

    def _coords(self, tma: Tma, row_shift: str = "") -> str:
        coords = list(tma.coords)
        d = next(i for i, b in enumerate(tma.block) if b == self.rows) if self.rows in tma.block else None
        if d is not None and row_shift:
            coords[d] = f"{coords[d]} + {row_shift}"
        return "[" + ", ".join(coords) + "]"

    def _view(self, ref: str, tma: Tma) -> str:
        dims = ["ROWS" if b == self.rows else b for b in tma.block if b != "1"]
        return f"{ref}.reshape([{', '.join(dims)}])"

    def _tiles(self, body: list) -> list:
        """A partition's lines over its program's tiles: `body` once per tile of a persistent grid
        (counted by `it`), else once. On a grid drawing its tiles, the loader's and the consumers'
        walks are `_drawn_tiles` and `_taken_tiles`."""
        if not self.tile_loop:
            return ["it = 0"] + body
        return ["it = 0", self.tile_loop] + ["    " + s for s in body + ["it += 1"]]

    def _publish(self, ticket: str) -> list:
        """The loader's lines that hand a ticket to the consumers through `tile_ids` (the loader's
        warps write it before the barrier arrival that releases it)."""
        return [f"tile_ids.index(rslot).store(gl.full([1], {ticket}, gl.int32, id_layout))", "gl.thread_barrier()"]

    def _drawn_tiles(self, tile: list) -> list:
        """The loader's walk over the tiles it draws: each ticket goes to the consumers with the
        tile's residents (`tile` publishes it), and the ticket past the tiles with a bare arrival on
        the next slot; the program that drew the last ticket resets the counter. The next ticket is
        drawn once the tile's loads are issued. Drawn one tile ahead (a program then holds a tile it
        has not started), whether read where drawn or only at the tile's end, the causal forward ran
        4-8% slower on the H100 (2026-11-27, notes/gluon_backend.md)."""
        d = self.draw
        end = [f"rslot = it % {self.slots}",
               f"mbarrier.wait(resident_empty.index(rslot), ((it // {self.slots}) & 1) ^ 1)",
               *self._publish(d.ticket), "mbarrier.arrive(resident_bar.index(rslot))"]
        return ["it = 0", d.draw, f"while {d.test}:"] + ["    " + s for s in tile + ["it += 1", d.draw]] + end + \
            d.reset.splitlines()

    def _taken_tiles(self, tile: list) -> list:
        """The consumers' walk: each takes its next tile's slot, waits for its residents and reads
        the ticket the loader published there, until the ticket past the tiles."""
        d = self.draw
        take = [f"rslot = it % {self.slots}", f"mbarrier.wait(resident_bar.index(rslot), (it // {self.slots}) & 1)",
                f"{d.ticket} = gl.max(tile_ids.index(rslot).load(id_layout), 0)"]
        return ["it = 0"] + take + [f"while {d.test}:"] + ["    " + s for s in tile + ["it += 1"] + take]

    def _loader(self, name: str, sig: str, shared: str) -> str:
        lines = ["@gluon.jit", f"def {name}_loader({sig}, {shared}):", f"    ROWS: gl.constexpr = {self.rows} // GROUPS",
                 *self._id_layout()]
        lines += [f"    vec_layout: gl.constexpr = {VEC_LAYOUT}"] if self.row_rings else []
        # a tile's residents load into their slot once both warpgroups' dots of the tile before in
        # that slot read theirs: on a persistent grid, during the previous tile
        tile = self.scalar_lines(self.prologue) + [
            f"rslot = it % {self.slots}",
            f"mbarrier.wait(resident_empty.index(rslot), ((it // {self.slots}) & 1) ^ 1)"]
        tile += self._publish(self.draw.ticket) if self.draw else []
        tile += [
            "mbarrier.expect(resident_bar.index(rslot), GROUPS * (" +
            " + ".join(f"{self.site(r)}.block_type.nbytes" for r in self.residents) + "))",
            "for g in gl.static_range(GROUPS):"]
        tile += [f"    tma.async_copy_global_to_shared({self.site(r)}, {self._coords(r, 'g * ROWS')}, "
                 f"resident_bar.index(rslot), {r.name}_smem.index(rslot * GROUPS + g))" for r in self.residents]
        tile += self._loader_items(self.nest)
        walk = self._drawn_tiles(tile) if self.draw else self._tiles(tile)
        body = self.scalar_lines(self.head) + ["c = 0"] + walk
        return "\n".join(lines + ["    " + s for s in body])

    def _loader_items(self, items: list) -> list:
        """The loader's lines of the loops (and the scalar loops around them): each step of a
        device loop fills every ring's next slot once the consumers released it."""
        out = []
        for item in items:
            if isinstance(item, Outer):
                out += [item.header] + ["    " + s for s in self._loader_items(item.items)]
            elif isinstance(item, Loop):
                out.append(f"for {item.var} in range({_gl(item.begin)}, {_gl(item.end)}, {item.step}):")
                step = ["slot = c % STAGES", "phase = (c // STAGES) & 1"]
                for r, load in enumerate(item.loads):
                    tma = self.tmas[load]
                    step += [f"mbarrier.wait(ring_{r}_empty.index(slot), phase ^ 1)",
                             f"mbarrier.expect(ring_{r}_ready.index(slot), {self.site(tma)}.block_type.nbytes)",
                             f"tma.async_copy_global_to_shared({self.site(tma)}, {self._coords(tma)}, "
                             f"ring_{r}_ready.index(slot), ring_{r}.index(slot))"]
                for k, load in enumerate(item.rows):
                    step += [f"mbarrier.wait(row_{k}_empty.index(slot), phase ^ 1)", *self._row_copy_lines(k, load)]
                out += ["    " + s for s in step + ["c += 1"]]
            else:
                out += self.scalar_lines([item])
        return out

    def _row_copy_lines(self, ring: int, name: str) -> list:
        """The loader's copy of row copy `name` into its ring's slot: each thread copies its
        elements (masked ones read as zeros) and arrives on the slot's barrier once they landed."""
        copy = self.row_copies[name]
        args = [f"row_{ring}.index(slot)", self.emit(copy.pointer, VEC)]
        args += [f"mask={self.emit(copy.mask, VEC)}"] if copy.mask is not None else []
        args += [f"eviction_policy={ast.unparse(copy.eviction_policy)}"] if copy.eviction_policy is not None else []
        return [f"async_copy.async_copy_global_to_shared({', '.join(args)})",
                f"async_copy.mbarrier_arrive(row_{ring}_ready.index(slot), increment_count=False)"]

    def _turn(self, t: str) -> list:
        """Wait for turn `t`: warpgroup WG's barrier completes a phase each time WG - 1 (round the
        ring) passes the turn, and WG 0 takes the first turn unasked. A warpgroup cannot pass twice
        before the next one has waited, since it waits for its own turn from the ring in between,
        so the phase's parity tells the turns apart for any number of groups."""
        return ["if GROUPS > 1:", f"    mbarrier.wait(turn.index(WG), (({t}) & 1) ^ (1 if WG == 0 else 0))"]

    PASS_TURN = ["if GROUPS > 1:", "    mbarrier.arrive(turn.index((WG + 1) % GROUPS))"]

    def _consumer(self, name: str, sig: str, shared: str) -> str:
        head = ["@gluon.jit",
                f"def {name}_consumer(WG: gl.constexpr, {sig}, {shared}):",
                f"    ROWS: gl.constexpr = {self.rows} // GROUPS",
                f"    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
                f"instr_shape=[16, {self.keys}, 16])",
                *[line for family in self.widths for line in (
                    f"    {family.lower()}_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], "
                    f"warps_per_cta=[4, 1], instr_shape=[16, {self.widths[family]}, 16])",
                    f"    {self._operand_layout(family)}: gl.constexpr = gl.DotOperandLayout(operand_index=0, "
                    f"parent={family.lower()}_layout, k_width=2)")],
                *self._id_layout()]
        tile = self._consumer_statements(self.prologue)
        if not self.draw:  # a drawn tile's slot is taken before its ticket is known (_taken_tiles)
            tile += [f"rslot = it % {self.slots}", f"mbarrier.wait(resident_bar.index(rslot), (it // {self.slots}) & 1)"]
        tile += self._consumer_items(self.nest)
        release = ["mbarrier.arrive(resident_empty.index(rslot))"]
        if self.slot_stores:
            tile += self._consumer_statements(self.epilogue) + ["tma.store_wait(0)"] + release
        else:
            tile += release + self._consumer_statements(self.epilogue)
        body = self._consumer_statements(self.head) + self._constant_fills()
        body += [f"s_zero = gl.zeros([ROWS, {self.keys}], gl.float32, s_layout)", "c = 0", "t = 0"]
        body += self._taken_tiles(tile) if self.draw else self._tiles(tile)
        body += ["tma.store_wait(0)"] if self.stores else []
        if any("vec_layout" in line for line in body):
            head.append(f"    vec_layout: gl.constexpr = {VEC_LAYOUT}")
        return "\n".join(head + ["    " + s for s in body])

    @staticmethod
    def _operand_layout(family: str) -> str:
        """The name of the register operand layout of the accumulating dots into `family`."""
        return f"p{family[1:]}_layout"

    def _constant_fills(self) -> list:
        """A consumer's lines that write its constant tiles into shared memory, before any dot reads
        them (the fence orders the stores before the wgmma's reads)."""
        lines = [f"const_{k}.index(WG).store(gl.full([{self.keys}, {c.width}], {c.value}, {c.dtype}, "
                 "gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])))" for k, c in enumerate(self.constants)]
        return lines + ["fence_async_shared()"] if lines else []

    def _id_layout(self) -> list:
        """A partition's layout of a published ticket (one int32 over its 4 warps), if it takes any."""
        return ["    id_layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])"] if self.draw else []

    def _consumer_items(self, items: list) -> list:
        out = []
        for item in items:
            if isinstance(item, Outer):
                out += [item.header] + ["    " + s for s in self._consumer_items(item.items)]
            elif isinstance(item, Loop):
                out += self._consumer_loop(item)
            else:
                out += self._consumer_statements([item])
        return out

    def _consumer_statements(self, stmts: list) -> list:
        """The consumers' lines of statements outside the loops, in source order."""
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.Expr) or stmt.targets[0].id in self.shapes:
                out += self.statement(stmt)
            elif stmt.targets[0].id not in self.defs and stmt.targets[0].id not in self.tmas:
                out.append(f"{stmt.targets[0].id} = {_gl(ast.unparse(stmt.value))}")
        return out

    def _consumer_loop(self, loop: Loop) -> list:
        """A consumer's rotated loop: step j issues the fresh dots of tile j together with the
        accumulating dots of tile j - 1, waits for the fresh ones only, runs a_part while the others
        run (statements that do not read the fresh results, such as row loads, run before that wait),
        then waits for the accumulating dots and runs acc_part. The first step (fresh dots alone) and the drain
        (the last tile's accumulating dots) are peeled. A ring slot read only by fresh dots is
        released once they are done; one read by an accumulating dot after that dot, a step later.
        Register operands staged in shared memory are written after the wait for the dots that
        read the previous tile's."""
        def ready(rings, slot: str, count: str) -> list:
            return [f"mbarrier.wait({r}_ready.index({slot}), (({count}) // STAGES) & 1)" for r in sorted(rings)]

        def release(rings, slot: str) -> list:
            return [f"mbarrier.arrive({r}_empty.index({slot}))" for r in sorted(rings)]

        a_part, acc_part, renames = self.parts(loop)
        fresh_rings = {f"ring_{d.ring}" for d in loop.fresh}
        late = {f"ring_{d.ring}" for d in loop.accum if d.ring is not None}
        early = fresh_rings - late
        rows = {f"row_{k}" for k in range(len(loop.rows))}
        # each thread reads a row copy's slot: released once the warpgroup passed a barrier
        rows_read = ["gl.thread_barrier()", *release(rows, "slot")] if rows else []

        def operand(dot: Dot, slot: str) -> str:
            if dot.constant is not None:
                return f"const_{dot.constant}.index(WG)"
            view = self._view(f"ring_{dot.ring}.index({slot})", self.rings[dot.ring])
            return view + (".permute((1, 0))" if dot.transposed else "")

        def issue_fresh() -> list:
            return [f"f{i}_tok = warpgroup_mma({self._view(f'{d.a.id}_smem.index(rslot * GROUPS + WG)', self.tmas[d.a.id])}, "
                    f"{operand(d, 'slot')}, s_zero, use_acc=False, is_async=True)" for i, d in enumerate(loop.fresh)]

        def wait_fresh(pending: int) -> list:
            return [f"{d.target} = warpgroup_mma_wait({pending}, deps=(f{i}_tok, ))" for i, d in enumerate(loop.fresh)]

        def staged(i: int) -> str:
            """The register operand of accumulating dot i: in registers, or in shared memory (a tile
            per warpgroup)."""
            return f"operand_{i}.index(WG)" if self.shared_operands else f"pend_a{i}"

        issue_accum = [f"a{i}_tok = warpgroup_mma({staged(i)}, {operand(d, 'prev')}, pend_acc{i}, is_async=True)"
                       for i, d in enumerate(loop.accum)]
        # in shared memory, an operand is written once the dots that read the previous tile's are
        # done (with two tiles per warpgroup, written as soon as computed, ptxas 12.8 and 12.9
        # crashed on some of the kernels, 2026-11-27)
        stage = [f"{staged(i)}.store({self.emit(d.a, 'S')})" for i, d in enumerate(loop.accum)] + \
            ["fence_async_shared()"] if self.shared_operands else []
        wait_accum = [f"{d.acc} = warpgroup_mma_wait(0, deps=(a{i}_tok, ))" for i, d in enumerate(loop.accum)]
        families = [self._family_of(d) for d in loop.accum]
        pend = []
        for i, (d, family) in enumerate(zip(loop.accum, families)):
            if not self.shared_operands:  # a register operand another dot read already is moved, not recomputed
                same = next((j for j in range(i) if ast.dump(loop.accum[j].a) == ast.dump(d.a)), None)
                source = self.emit(d.a, 'S') if same is None else f"pend_a{same}"
                pend.append(f"pend_a{i} = gl.convert_layout({source}, {self._operand_layout(family)})")
            pend.append(f"pend_acc{i} = {self.emit(d.acc_in, family)}")
        fresh_results = {d.target for d in loop.fresh}
        waits = []
        for stmt in a_part:  # what does not wait for the fresh dots (row loads, say) runs while they do
            if _read(stmt) & fresh_results:
                fresh_results |= _assigned(stmt)
                waits.append(stmt)
        ahead = [s for st in a_part if st not in waits for s in self.statement(st)]
        rest = [s for st in a_part if st in waits for s in self.statement(st)]
        tail = [s for st in acc_part for s in self.statement(st)] + \
            [f"{s.targets[0].id} = {s.value.id}" for s in renames] + pend

        n = f"n_{loop.var}"
        out = [f"{n} = gl.cdiv(gl.maximum(({_gl(loop.end)}) - ({_gl(loop.begin)}), 0), {loop.step})",
               f"if {n} > 0:"]
        first_step = [f"{loop.var} = {_gl(loop.begin)}", "slot = c % STAGES", *ready(fresh_rings | rows, "slot", "c"),
                      *self._turn("t"), *issue_fresh(), *self.PASS_TURN, *ahead, *wait_fresh(0), *release(early, "slot"),
                      *rest, *rows_read, *stage, *tail]
        step = [f"{loop.var} = {_gl(loop.begin)} + jj * {loop.step}", "slot = (c + jj) % STAGES",
                "prev = (c + jj - 1) % STAGES", *ready(fresh_rings | rows, "slot", "c + jj"),
                *ready(late - fresh_rings, "prev", "c + jj - 1"),
                *self._turn("t + jj"), *issue_fresh(), *issue_accum, *self.PASS_TURN, *ahead, *wait_fresh(len(loop.accum)),
                *release(early, "slot"), *rest, *rows_read, *wait_accum, *release(late, "prev"), *stage, *tail]
        drain = [f"prev = (c + {n} - 1) % STAGES", *ready(late - fresh_rings, "prev", f"c + {n} - 1"),
                 *self._turn(f"t + {n}"), *issue_accum, *self.PASS_TURN, *wait_accum, *release(late, "prev")]
        # the turn counter advances only by the turns taken: the turn barriers' waits test a
        # phase's parity, so a loop without steps that advanced it would let both warpgroups pass
        # out of turn and, in some interleavings, both wait for the other (a deadlock)
        inner = first_step + [f"for jj in range(1, {n}):"] + ["    " + s for s in step] + drain + [f"t += {n} + 1"]
        out += ["    " + s for s in inner]
        out += [f"c += {n}"]
        return out

    def _loop_bound_params(self) -> list:
        """The run-time parameters that bound the device loops inside scalar loops (Outer). The
        kernel does not specialize them: Triton makes a size of 1 a constant, and the dk/dv
        kernel's peeled loops over one query (the first then has a constant zero trip count) crashed
        Triton 3.6's LLVM lowering (ConvertTritonGPUToLLVM, an out-of-range index; 2026-11-27).
        Loops outside scalar loops compile at sizes of 1 (the forward's and dq's keys), and there
        the specialization is worth keeping: unspecialized, the forward ran 0.2-2.5% slower on the
        H100 (scratch/gluon_unspecialized_ab.py)."""
        def nested(items: list, inside: bool) -> list:
            return [loop for item in items if isinstance(item, (Loop, Outer))
                    for loop in (nested(item.items, True) if isinstance(item, Outer) else [item] if inside else [])]

        values = {n.targets[0].id: n.value for n in ast.walk(self.fn)
                  if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        todo = [name for loop in nested(self.nest, False) for text in (loop.begin, loop.end)
                for name in _names(ast.parse(text, mode="eval"))]
        seen, found = set(), []
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in values:
                todo += _names(values[name])
            elif name in self.params and name not in self.constexprs:
                found.append(name)
        return [p for p in self.params if p in found]

    def _kernel(self, name: str, sig: str, args: str, shared: str, residents: list) -> str:
        unspecialized = self._loop_bound_params()
        decorator = f"@gluon.jit(do_not_specialize={unspecialized!r})" if unspecialized else "@gluon.jit"
        lines = [decorator, f"def {name}({sig}):", f"    ROWS: gl.constexpr = {self.rows} // GROUPS"]
        body = []
        for tma, ring in [(r, None) for r in residents] + [(t, None) for t in self.allocated_stores] + \
                [(t, r) for r, t in enumerate(self.rings)]:
            desc = self.site(tma)
            buffer = f"ring_{ring}" if ring is not None else self.store_smem.get(tma.name, f"{tma.name}_smem")
            count = "STAGES" if ring is not None else f"{self.slots} * GROUPS" if tma in residents else "GROUPS"
            body.append(f"{buffer} = gl.allocate_shared_memory({desc}.dtype, [{count}, "
                        f"{', '.join(self._block(tma))}], {desc}.layout)")
        dtype = f"{self.site(self.rings[0])}.dtype"
        body += [f"{buffer} = gl.allocate_shared_memory({dtype}, [GROUPS, ROWS, {self.keys}], "
                 f"gl.NVMMASharedLayout.get_default_for([ROWS, {self.keys}], {dtype}))" for buffer in self._operand_buffers()]
        body += [f"const_{k} = gl.allocate_shared_memory({c.dtype}, [GROUPS, {self.keys}, {c.width}], "
                 f"gl.NVMMASharedLayout.get_default_for([{self.keys}, {c.width}], {c.dtype}))"
                 for k, c in enumerate(self.constants)]
        body += [f"resident_bar = gl.allocate_shared_memory(gl.int64, [{self.slots}, 1], mbarrier.MBarrierLayout())",
                 f"resident_empty = gl.allocate_shared_memory(gl.int64, [{self.slots}, 1], mbarrier.MBarrierLayout())",
                 "turn = gl.allocate_shared_memory(gl.int64, [GROUPS, 1], mbarrier.MBarrierLayout())",
                 f"for i in gl.static_range({self.slots}):",
                 "    mbarrier.init(resident_bar.index(i), count=1)", "    mbarrier.init(resident_empty.index(i), count=GROUPS)"]
        body += [f"row_{k} = gl.allocate_shared_memory({tensor}.dtype.element_ty, [STAGES, {self.keys}], "
                 "gl.SwizzledSharedLayout(1, 1, 1, [0]))" for k, tensor in enumerate(self.row_rings)]
        rings = self._ring_names()
        body += [f"{ring}_{kind} = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())"
                 for ring in rings for kind in ("ready", "empty")]
        body += ["for i in gl.static_range(STAGES):"]
        # a TMA copy's slot is ready on its bytes; a row copy's once each loader thread's copies landed
        body += [f"    mbarrier.init({ring}_{kind}.index(i), count={count})" for ring in rings
                 for kind, count in (("ready", LOADER_THREADS if ring.startswith("row") else 1), ("empty", "GROUPS"))]
        body += ["for i in gl.static_range(GROUPS):", "    mbarrier.init(turn.index(i), count=1)"]
        if self.draw:
            body.append(f"tile_ids = gl.allocate_shared_memory(gl.int32, [{self.slots}, 1], "
                        "gl.SwizzledSharedLayout(1, 1, 1, [0]))")
        partitions = [f"({name}_consumer, ({g}, {args}, {shared}))" for g in range(self.groups)]
        partitions.append(f"({name}_loader, ({args}, {shared}))")
        warps = ", ".join([str(PARTITION_WARPS)] * self.groups)
        regs = ", ".join(["CONSUMER_REGS"] * (self.groups - 1) + [str(LOADER_REGS)])
        body.append(f"gl.warp_specialize([{', '.join(partitions)}], [{warps}], [{regs}])")
        return "\n".join(lines + ["    " + s for s in body])


HEADER = """from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
"""
