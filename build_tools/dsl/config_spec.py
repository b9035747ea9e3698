"""ConfigSpec: the legal values of every knob of a bound kernel, its default config, random configs,
and the flat (knob-by-knob) view the autotuner searches over."""
from __future__ import annotations

import dataclasses
import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable

import triton

from . import exc
from .config import FIELDS, GLUON_FLAGS, Config
from .session import Discovery

BACKENDS = ("triton", "gluon")
CONSUMER_GROUPS = (1, 2, 3)
# the groups the search offers: three warpgroups share 16 warps' registers (128 a thread at launch,
# 160 for each consumer after setmaxnreg), which a 128-wide accumulator or score tile beside the
# next step's does not fit (ptxas fails: "Insufficient registers", C7602, D128 and 256-key tiles),
# so random configs would not all compile; table entries set three, measured by
# tools/config_probe.py (as `maxnreg`)
SEARCHED_CONSUMER_GROUPS = (1, 2)
# persistent_dynamic: a persistent grid whose programs draw their next tile from a counter
PID_TYPES = ["flat", "xyz", "persistent_blocked", "persistent_interleaved", "persistent_dynamic"]
INDEXING = ["pointer", "block_ptr", "tensor_descriptor"]
# "reread": evict_last where a looped reduction's chunk loop reads the site (a later chunk loop
# re-reads the same data, which then comes from L2) and evict_first where any other code reads it
EVICTION = ["", "first", "last", "reread"]
# Pieces a tensor-descriptor store may write its tile in, along the last dimension: each piece is
# staged through its own, smaller shared-memory buffer, which leaves room for another pipeline stage
# (the persistent matmul's 128x256 tile at 4 stages: scratch/matmul_persistent_probe.py)
STORE_SUBTILES = (1, 2, 4)
MAX_VOLUME = 1 << 16
# Largest block of a dimension: 256 where the block feeds a matrix product; 16384 elsewhere (a split
# softmax row's 8192-column tiles measured 1.03-1.05x of 4096-column tiles on an H100, 2026-11-26).
MAX_DOT_BLOCK = 256
MAX_BLOCK = 16384
MAX_REDUCTION_CHUNK = 16384  # widest chunk of a looped reduction
MAX_DOT_VOLUME = 1 << 21
# A device loop with a dot is not unrolled (loop_unroll_factor 0: Triton's choice, or 1): Triton 3.6 on
# sm_90 miscompiles such loops unrolled at 16 or 32 warps (wrong values, NaN or an illegal address),
# and at 8 warps with TF32 dots in a one-stage loop (notes/dsl_gaps_kernels.md gap 16); no tuned
# config unrolled one.
DOT_ELEMENTS_PER_WARP = 128
# A program's largest tensor spread over its threads: more elements per thread than registers hold
# spill, and the compile time grows with them: ptxas took over 5 minutes on a 512x128 fp32 tile in 1
# warp (2048 elements per thread, H200 run of 2026-11-23), and LLVM's O3 pass over 150 s on a softmax
# backward's 16384-column tile in 1 warp (512 per thread, H100 GPU tests of 2026-11-26). num_warps
# rises until each thread holds at most this (128: the most any tuned table's config holds).
MAX_ELEMENTS_PER_THREAD = 128
# A matrix product's result (an fp32 accumulator) holds registers for the whole loop, beside its
# operands: an attention backward random config with a 128x256 product (2026-11-24) outlasted the GPU
# tests' 550 s timeout in ptxas at 2 warps (512 elements per thread) and a 7-minute cross-compile at
# 4 warps (256); at 8 warps (128) it cross-compiled in 16 s. num_warps rises until each thread
# holds at most this many.
MAX_DOT_ELEMENTS_PER_THREAD = 128


# Knobs with one entry per device loop, memory access or reduction dim of the structure a config
# compiles: the positions of one structure (numbered in the order the compile first meets them, see
# session.memory_site) mean nothing in another, so `normalize` sizes these lists by the structure
# the config's tunables compile, and the search offers positions up to the most any structure has.
RANGE_KNOBS = ("range_unroll_factors", "range_num_stages", "range_warp_specializes", "range_peel_tails")
PER_STRUCTURE_KNOBS = ("reduction_loops", *RANGE_KNOBS, "indexing", "load_eviction_policies", "store_subtiles")


def positions(found: Discovery) -> dict[str, int]:
    """How many entries each of PER_STRUCTURE_KNOBS has in the structure `found`."""
    loops = len(found.device_loops)
    return {"reduction_loops": len(found.rdims), **{name: loops for name in RANGE_KNOBS},
            "indexing": found.loads + found.stores, "load_eviction_policies": found.loads,
            "store_subtiles": found.stores}


def structure_signature(found: Discovery) -> tuple:
    """What the knobs of a structure depend on: its device loops, memory accesses and reduction dims."""
    return (tuple(dataclasses.astuple(loop) for loop in found.device_loops), found.loads, found.stores,
            tuple(found.rdims), frozenset(found.not_loopable), frozenset(found.splittable_stores))


def warp_specializable(loop) -> bool:
    """Whether `range_warp_specializes` applies to a device loop: one with a dot, none of whose
    dots reads a constant tile (DeviceLoopInfo.constant_operand)."""
    return loop.has_dot and not loop.constant_operand


def unroll_choices(loop) -> tuple:
    """A device loop's `range_unroll_factors` choices: none with a run-time branch, at most 1 with a
    dot (see DOT_ELEMENTS_PER_WARP's note on unrolled dot loops)."""
    return (0,) if loop.has_branch else (0, 1) if loop.has_dot else (0, 1, 2, 4)


@dataclass(frozen=True)
class Knob:
    name: str
    index: int | None
    choices: tuple


def pow2_range(low: int, high: int) -> list[int]:
    out, v = [], 1
    while v <= high:
        if v >= low:
            out.append(v)
        v *= 2
    return out or [low]


class ConfigSpec:
    def __init__(self, found: Discovery, discover: Callable[[dict], Discovery] | None = None):
        """`found`: the kernel's structure under default tunables; `discover(tunables)`: its structure
        under other tunable values (a tunable may switch whole branches of the kernel on or off)."""
        self.found = found
        self._discover = discover
        self._found_by_tunables = {self._tunable_key({}): found}
        self._structures: list[Discovery] | None = None
        self._knob_list: list[Knob] | None = None

    def _tunable_key(self, fields: dict) -> tuple:
        return tuple((name, repr(fields.get(name, fragment.default()))) for name, fragment in sorted(self.found.tunables.items()))

    def found_for(self, fields: dict) -> Discovery:
        """What a compile with the tunable values in `fields` contains."""
        key = self._tunable_key(fields)
        if key not in self._found_by_tunables:
            tunables = {name: fields.get(name, fragment.default()) for name, fragment in self.found.tunables.items()}
            self._found_by_tunables[key] = self._discover(tunables) if self._discover else self.found
        return self._found_by_tunables[key]

    def structures(self) -> list[Discovery]:
        """The distinct structures the tunables compile, the default tunables' first: from each
        assignment that compiled a new structure, every single tunable is moved to each of its
        other values (a structure that needs two tunables moved at once from assignments that
        compile known structures is not found)."""
        if self._structures is None:
            tunables = self.found.tunables
            start = {name: fragment.default() for name, fragment in tunables.items()}
            found = {structure_signature(self.found): self.found}
            pending = [start]
            while pending:
                assignment = pending.pop()
                for name, fragment in sorted(tunables.items()):
                    for value in fragment.choices():
                        moved = {**assignment, name: value}
                        structure = self.found_for(moved)
                        signature = structure_signature(structure)
                        if signature not in found:
                            found[signature] = structure
                            pending.append(moved)
            self._structures = list(found.values())
        return self._structures

    @property
    def _knobs(self) -> list[Knob]:
        if self._knob_list is None:
            self._knob_list = self._build_knobs(self.structures())
        return self._knob_list

    # ------------------------------------------------------------------ knobs
    def block_range(self, i: int) -> list[int]:
        info = self.found.blocks[i]
        low = max(16 if info.in_dot else 1, triton.next_power_of_2(info.low))
        top = max(low, triton.next_power_of_2(max(info.size, 1)))
        high = min(top, MAX_DOT_BLOCK if info.in_dot else MAX_BLOCK)
        if info.high is not None:
            high = max(low, min(high, info.high))
        return pow2_range(low, max(low, high))

    def reduction_range(self, r: int, found: Discovery | None = None) -> list:
        """None (the whole dim in registers), else the chunk of a looped reduction, up to one chunk
        as wide as the dim: a loop of one step, whose later passes load the data again (from L1 or
        L2) instead of holding it in registers across the reduction (torch.compile's choice for
        RMSNorm rows of 8192 on an H200, 2026-11-24). `found`: the structure compiled (default: the
        default tunables')."""
        found = found or self.found
        if r >= len(found.rdims):
            return [None]
        size = found.rdims[r]
        if r in found.not_loopable or size <= 16:
            return [None]
        top = min(triton.next_power_of_2(size), MAX_REDUCTION_CHUNK)
        return [None] + pow2_range(16, top)

    def reduction_choices(self, r: int) -> list:
        """The search's choices for reduction_loops[r]. Tunables may compile another structure,
        whose r-th reduction dim can be wider than the default structure's (softmax_bwd: the
        default's 2000 partial dots, the whole-row structure's 32000 columns), so with tunables the
        choices run up to the largest chunk; normalize clamps each into the compiled structure's
        range."""
        if not self.found.tunables:
            return self.reduction_range(r)
        return [None] + pow2_range(16, MAX_REDUCTION_CHUNK)

    def _build_knobs(self, structures: list[Discovery]) -> list[Knob]:
        """The knobs over `structures`: PER_STRUCTURE_KNOBS up to the most entries any of them has,
        each position offering what it offers in any of them that has it (normalize clamps a value
        to the structure the config compiles)."""
        f = self.found
        most = {name: max(positions(s)[name] for s in structures) for name in PER_STRUCTURE_KNOBS}
        knobs = [Knob("block_sizes", i, tuple(self.block_range(i))) for i in range(len(f.blocks))]
        knobs += [Knob("reduction_loops", r, tuple(self.reduction_choices(r))) for r in range(most["reduction_loops"])]
        for i, ndims in enumerate(f.top_loops):
            if ndims > 1:
                knobs.append(Knob("loop_orders", i, tuple(tuple(p) for p in itertools.permutations(range(ndims)))))
                knobs.append(Knob("l2_groupings", i, (1, 2, 4, 8, 16, 32, 64)))
        for i in range(f.flatten_count):
            knobs.append(Knob("flatten_loops", i, (False, True)))
        for i in range(len(f.top_loops)):
            unflattenable = all(i in s.memoryless_loop_kernels() for s in structures)
            knobs.append(Knob("persistent_flattens", i, (False,) if unflattenable else (False, True)))
            waits = all(i in s.waiting_loops for s in structures)
            knobs.append(Knob("tile_reversals", i, (False,) if waits else (False, True)))
        for i in range(most["range_num_stages"]):
            loops = [s.device_loops[i] for s in structures if i < len(s.device_loops)]
            specializable = any(warp_specializable(loop) for loop in loops)
            knobs.append(Knob("range_unroll_factors", i, max((unroll_choices(loop) for loop in loops), key=len)))
            knobs.append(Knob("range_num_stages", i, (0, 1, 2, 3, 4)))
            knobs.append(Knob("range_warp_specializes", i, (None, False, True) if specializable else (None,)))
            knobs.append(Knob("range_peel_tails", i, (False, True) if any(loop.peelable for loop in loops) else (False,)))
        if f.runtime_rdims or f.tunables:
            knobs.append(Knob("static_reduction_sizes", None, (False, True)))
        knobs.append(Knob("num_warps", None, (1, 2, 4, 8, 16, 32)))
        knobs.append(Knob("num_stages", None, (1, 2, 3, 4, 5)))
        max_dims = max(f.top_loops, default=1)
        knobs.append(Knob("pid_type", None, tuple(p for p in PID_TYPES if p != "xyz" or max_dims <= 3)))
        for site in range(most["indexing"]):
            knobs.append(Knob("indexing", site, tuple(INDEXING)))
        for site in range(most["load_eviction_policies"]):
            knobs.append(Knob("load_eviction_policies", site, tuple(EVICTION)))
        for store in range(most["store_subtiles"]):
            splittable = any(store in s.splittable_stores for s in structures)
            knobs.append(Knob("store_subtiles", store, STORE_SUBTILES if splittable else (1,)))
        for name, fragment in sorted(f.tunables.items()):
            knobs.append(Knob(name, None, tuple(fragment.choices())))
        rows = self._gluon_row_blocks()
        if rows:  # each top-level loop's kernel: Triton, or Gluon where the lowering takes its form
            for loop, row in enumerate(rows):
                knobs.append(Knob("backend", loop, BACKENDS if row is not None else BACKENDS[:1]))
            for field in self.GLUON_FLAGS:
                for loop, row in enumerate(rows):
                    knobs.append(Knob(field, loop, (False, True) if row is not None else (False,)))
            knobs.append(Knob("consumer_groups", None, SEARCHED_CONSUMER_GROUPS))
        # last, so that adding it left every earlier knob's draw in seeded random configs as it was;
        # a kernel of one top-level loop has no kernel of its own to depend on
        if len(f.top_loops) > 1:
            for loop in range(len(f.top_loops)):
                knobs.append(Knob("dependent_launches", loop, (False, True) if loop else (False,)))
        if f.runtime_conditions:  # after every other knob, for the same reason
            knobs.append(Knob("constexpr_conditions", None, (False, True)))
        return knobs

    def knobs(self) -> list[Knob]:
        """The search's knobs: over every structure the tunables compile (see structures)."""
        return list(self._knobs)

    def knobs_of(self, fields: dict) -> list[Knob]:
        """The knobs of the one structure that the tunable values in `fields` compile."""
        return self._build_knobs([self.found_for(fields)])

    # ------------------------------------------------------------------ flat view
    def flatten(self, config: Config) -> list:
        """The config's value of each knob; a position its structure lacks takes the knob's first
        choice (no effect there)."""
        config = self.normalize(config)
        out = []
        for knob in self._knobs:
            value = config.get(knob.name, knob.choices[0])  # the back end's fields are left out by default
            if knob.name in self.PER_LOOP:
                value = self.per_loop(config, knob.name)
            if knob.index is not None:
                value = value[knob.index] if knob.index < len(value) else knob.choices[0]
            out.append(value)
        return [tuple(v) if isinstance(v, list) else v for v in out]

    def unflatten(self, values: list) -> Config:
        fields: dict[str, Any] = {}
        for knob, value in zip(self._knobs, values):
            if knob.index is None:
                fields[knob.name] = value
            else:
                fields.setdefault(knob.name, [])
                lst = fields[knob.name]
                while len(lst) <= knob.index:
                    lst.append(None)
                lst[knob.index] = list(value) if isinstance(value, tuple) else value
        return self.normalize(Config(fields))

    # ------------------------------------------------------------------ defaults and normalization
    def default_config(self) -> Config:
        f = self.found
        blocks = self._default_blocks()
        reductions = []
        for r, size in enumerate(f.rdims):
            loopable = len(self.reduction_range(r)) > 1
            reductions.append(4096 if loopable and triton.next_power_of_2(size) > 8192 and 4096 < size else None)
        fields: dict[str, Any] = {
            "block_sizes": blocks,
            "reduction_loops": reductions,
            "loop_orders": [list(range(n)) for n in f.top_loops if n > 1],
            "l2_groupings": [1 for n in f.top_loops if n > 1],
            "flatten_loops": [False] * f.flatten_count,
            "range_unroll_factors": [0] * len(f.device_loops),
            "range_num_stages": [0] * len(f.device_loops),
            "range_warp_specializes": [None] * len(f.device_loops),
            "range_peel_tails": [False] * len(f.device_loops),
            **self._scalar_defaults(),
            "indexing": ["pointer"] * (f.loads + f.stores),
            "load_eviction_policies": [""] * f.loads,
            "persistent_flattens": [False] * len(f.top_loops),
            "tile_reversals": [False] * len(f.top_loops),
            "store_subtiles": [1] * f.stores,
        }
        for name, fragment in f.tunables.items():
            fields[name] = fragment.default()
        return self.normalize(Config(fields))

    def _top_loop_positions(self) -> dict[int, int]:
        """Maps a top-level loop's index in `top_loops` to its position in loop_orders/l2_groupings."""
        out, pos = {}, 0
        for i, n in enumerate(self.found.top_loops):
            if n > 1:
                out[i] = pos
                pos += 1
        return out

    def normalize(self, config: Config | dict) -> Config:
        config = Config(config)
        unknown = [k for k in config if k not in FIELDS and k not in self.found.tunables]
        if unknown:
            raise exc.InvalidConfig(f"unknown config field(s) {unknown}")
        fields = config.to_dict()
        for name, fragment in self.found.tunables.items():
            if name not in fields:
                fields[name] = fragment.default()
            elif fields[name] not in fragment.choices():
                raise exc.InvalidConfig(f"tunable {name}={fields[name]!r} is not one of {fragment.choices()}")
        compiled = self.found_for(fields)
        self._check_lengths(fields, compiled)
        sized = positions(compiled)
        blocks = list(fields.get("block_sizes") or [])
        defaults = None
        warpgroup_rows = self._warpgroup_row_blocks(self.per_loop(fields, "backend"))
        for i in range(len(self.found.blocks)):
            choices = self.block_range(i)
            if i >= len(blocks) or blocks[i] is None:
                defaults = defaults or self._default_blocks()
                blocks.append(defaults[i]) if i >= len(blocks) else blocks.__setitem__(i, defaults[i])
            value = int(blocks[i])
            if value & (value - 1) and i not in warpgroup_rows:
                raise exc.InvalidConfig(f"block_sizes[{i}]={value} is not a power of two")
            # a dot's block is clamped to its dim's size, except for the Gluon back end, whose TMA
            # tiles zero-fill past the size and whose row block is fixed by its warpgroups
            fixed = self.found.blocks[i].in_dot and fields.get("backend") != "gluon"
            blocks[i] = min(max(value, choices[0]), max(choices[-1], choices[-1] if fixed else value))
        fields["block_sizes"] = self._cap_volume(blocks[: len(self.found.blocks)], fields.get("reduction_loops"), compiled)
        reductions = list(fields.get("reduction_loops") or [])
        reductions += [None] * (sized["reduction_loops"] - len(reductions))
        for r in range(sized["reduction_loops"]):
            legal = self.reduction_range(r, compiled)
            value = reductions[r]
            if value is not None and value not in legal:
                value = None if len(legal) == 1 else max(c for c in legal[1:] if c <= max(value, 16)) if any(c for c in legal[1:] if c <= max(value, 16)) else legal[1]
            reductions[r] = value
        fields["reduction_loops"] = reductions[: sized["reduction_loops"]]
        n_multi = sum(1 for n in self.found.top_loops if n > 1)
        multi_dims = [n for n in self.found.top_loops if n > 1]
        orders = list(fields.get("loop_orders") or [])
        orders += [list(range(n)) for n in multi_dims[len(orders) :]]
        fields["loop_orders"] = [list(o) for o in orders[:n_multi]]
        for order, ndims in zip(fields["loop_orders"], multi_dims):
            if sorted(order) != list(range(ndims)):
                raise exc.InvalidConfig(f"loop order {order} is not a permutation of range({ndims})")
        groups = fields.get("l2_groupings") or []
        groups = list(groups) + [1] * (n_multi - len(groups))
        fields["l2_groupings"] = [int(g) for g in groups[:n_multi]]
        n_loops = len(compiled.device_loops)
        flat = list(fields.get("flatten_loops") or [])
        fields["flatten_loops"] = [bool(v) for v in (flat + [False] * (self.found.flatten_count - len(flat)))[: self.found.flatten_count]]
        for name, default in zip(RANGE_KNOBS, (0, 0, None, False)):
            values = list(fields.get(name) or [])
            values += [default] * (n_loops - len(values))
            fields[name] = values[:n_loops]
        for i, loop in enumerate(compiled.device_loops):
            if not warp_specializable(loop):
                fields["range_warp_specializes"][i] = None
            if loop.has_branch or (loop.has_dot and fields["range_unroll_factors"][i] > 1):
                fields["range_unroll_factors"][i] = 0
            fields["range_peel_tails"][i] = bool(fields["range_peel_tails"][i]) and loop.peelable
        for name, value in self._scalar_defaults().items():
            fields.setdefault(name, value)
        fields["static_reduction_sizes"] = bool(fields["static_reduction_sizes"]) and compiled.runtime_rdims
        warps = fields["num_warps"]
        if isinstance(warps, int) and warps >= 1 and not warps & (warps - 1):
            most = self._max_warps(fields["block_sizes"], fields.get("reduction_loops"), compiled)
            least = min(self._min_warps(fields["block_sizes"], fields.get("reduction_loops"), compiled), most)
            fields["num_warps"] = warps = max(min(warps, most), least)
        if not isinstance(warps, int) or warps < 1 or warps > 32 or warps & (warps - 1):
            raise exc.InvalidConfig(f"num_warps={warps!r} must be a power of two between 1 and 32")
        if not isinstance(fields["num_stages"], int) or fields["num_stages"] < 1:
            raise exc.InvalidConfig(f"num_stages={fields['num_stages']!r} must be a positive integer")
        fields.setdefault("pid_type", "flat")
        if fields["pid_type"] not in PID_TYPES:
            raise exc.InvalidConfig(f"pid_type {fields['pid_type']!r} is not one of {PID_TYPES}")
        if fields["pid_type"] == "xyz" and max(self.found.top_loops, default=1) > 3:
            fields["pid_type"] = "flat"
        sites = sized["indexing"]
        indexing = fields.get("indexing", "pointer")
        if isinstance(indexing, str):
            indexing = [indexing] * sites
        indexing = list(indexing) + ["pointer"] * (sites - len(indexing))
        for value in indexing:
            if value not in INDEXING:
                raise exc.InvalidConfig(f"indexing {value!r} is not one of {INDEXING}")
        fields["indexing"] = indexing[:sites]
        eviction = list(fields.get("load_eviction_policies") or [])
        eviction += [""] * (compiled.loads - len(eviction))
        fields["load_eviction_policies"] = eviction[: compiled.loads]
        persistent = fields["pid_type"] in ("persistent_blocked", "persistent_interleaved")  # a flattenable tl.range
        n_top = len(self.found.top_loops)
        flattens = list(fields.get("persistent_flattens") or []) + [False] * n_top
        memoryless = compiled.memoryless_loop_kernels()
        fields["persistent_flattens"] = [bool(v) and persistent and i not in memoryless for i, v in enumerate(flattens[:n_top])]
        for loop, kernel in enumerate(compiled.device_loop_kernels):  # Discovery.branched_loops
            if fields["persistent_flattens"][kernel] and kernel in compiled.branched_loops:
                fields["range_unroll_factors"][loop] = 0
        reversals = list(fields.get("tile_reversals") or []) + [False] * n_top
        fields["tile_reversals"] = [bool(v) and i not in compiled.waiting_loops for i, v in enumerate(reversals[:n_top])]
        subtiles = list(fields.get("store_subtiles") or []) + [1] * compiled.stores
        subtiles = subtiles[: compiled.stores]
        for store, value in enumerate(subtiles):
            if value not in STORE_SUBTILES:
                raise exc.InvalidConfig(f"store_subtiles[{store}]={value!r} is not one of {STORE_SUBTILES}")
            described = fields["indexing"][compiled.store_sites[store]] == "tensor_descriptor"
            subtiles[store] = value if described and store in compiled.splittable_stores else 1
        fields["store_subtiles"] = subtiles
        self._dependent_launches(fields)
        self._constexpr_conditions(fields, compiled)
        self._backend(fields, compiled)
        self._maxnreg(fields)
        return Config(fields)

    def _dependent_launches(self, fields: dict) -> None:
        """`dependent_launches`: one bool per top-level loop (or one for all): whether that loop's
        kernel is launched as a programmatic dependent launch (PDL: Hopper and later) of the kernel
        launched before it on the stream. Its programs may then be scheduled while that kernel's
        last programs still run (the kernel before it lets them from its start), and each waits at
        its start until that kernel has finished and its writes are visible, so only the launch and
        the grid's ramp overlap the other kernel's tail (see session.dependent_launch_lines). The
        first loop's kernel and Gluon kernels (whose lowering does not emit the wait) take False;
        left out where false for all."""
        backends = self.per_loop(fields, "backend")
        values = [value and loop > 0 and backends[loop] != "gluon"
                  for loop, value in enumerate(self.per_loop(fields, "dependent_launches"))]
        fields.pop("dependent_launches", None)
        if any(values):
            fields["dependent_launches"] = values

    @staticmethod
    def _constexpr_conditions(fields: dict, compiled: Discovery) -> None:
        """`constexpr_conditions` (bool): each run-time host condition that device code branches on
        (`programs == 1` of a dynamic size) reaches the kernel as a constexpr flag instead of an
        argument, so Triton compiles a kernel per value a call takes (two at most per condition),
        each holding only its side of the branches: fewer instructions, and a register allocation
        of its own (the RMSNorm backward's two dweight stores, one under each side, left both in
        every kernel: 255 registers against 240 at the H100's 16384x4096 entry, but 128 against
        156 at its 16384x1024 one). Left out where false or where no such condition exists."""
        value = fields.pop("constexpr_conditions", False)
        if not isinstance(value, bool):
            raise exc.InvalidConfig(f"constexpr_conditions {value!r}: a bool")
        if value and compiled.runtime_conditions:
            fields["constexpr_conditions"] = True

    def _gluon_row_blocks(self) -> list | None:
        """Each top-level loop's row block where the Gluon back end lowers its kernel (None where it
        does not); None when it lowers none."""
        rows = self.found.gluon_rows
        return rows if any(r is not None for r in rows) else None

    def _warpgroup_row_blocks(self, backends: list) -> set:
        """The blocks that the Gluon back end sets to its warpgroups' rows, given each top-level
        loop's back end (64 per group, so 192 for three: the one block that need not be a power of
        two, since each warpgroup's is)."""
        rows = self.found.gluon_rows
        return {rows[loop] for loop, backend in enumerate(backends)
                if backend == "gluon" and loop < len(rows) and rows[loop] is not None}

    GLUON_FLAGS = GLUON_FLAGS
    # whole-kernel bools left out of normalized configs where false (offered where they apply)
    OPTIONAL_FLAGS = ("constexpr_conditions",)
    PER_LOOP = {"backend": (BACKENDS[0], BACKENDS), **{flag: (False, (False, True)) for flag in GLUON_FLAGS},
                "dependent_launches": (False, (False, True))}

    def per_loop(self, fields, name: str) -> list:
        """A field given as one value for every top-level loop's kernel or as a list of one per
        loop (`backend`: each kernel's back end; `shared_operands`: whether its Gluon kernel reads
        the accumulating dots' register operands from shared memory; `relative_masks`: whether its
        Gluon kernel compares two tile indices with one offset moved across; `resident_stores`:
        whether its Gluon kernel on a persistent grid stages its stores in the resident tiles'
        slots instead of buffers of their own; `dependent_launches`: whether its kernel is a
        programmatic dependent launch of the one before it), as the per-loop list."""
        default, choices = self.PER_LOOP[name]
        value = fields.get(name, default)
        loops = len(self.found.top_loops)
        values = list(value) if isinstance(value, (list, tuple)) else [value] * loops
        if len(values) != loops or any(v not in choices or type(v) is not type(default) for v in values):
            raise exc.InvalidConfig(f"{name} {value!r}: one of {choices}, or a list of one per top-level loop ({loops})")
        return values

    def _backend(self, fields: dict, compiled: Discovery) -> None:
        """`backend`: "triton" (the default, left out of configs), "gluon" (build_tools/dsl/
        gluon_lowering.py: warp-specialized kernels of the loop form it takes), or a list of one
        of them per top-level loop (each loop is its own kernel: e.g. the attention backward's dq
        kernel in Gluon and its dk/dv kernel in Triton); a list of one name becomes that name. With
        Gluon, `consumer_groups` warpgroups of 64 rows (1 to 3; left out otherwise): the row block
        of each Gluon loop takes the groups' rows, the grid is one axis (flat, or persistent: its
        partitions walk the program's tiles together), and `num_stages` is the depth of the rings of
        streamed tiles (2 to 4; a Triton kernel beside it pipelines with the same value unless its
        loops set range_num_stages). A Gluon kernel whose device loops set `range_num_stages` takes
        that depth instead (one per kernel: the first set, 2 to 4, given to all its loops; left at 0
        where it equals num_stages), as when one kernel's shared memory holds fewer stages.
        `shared_operands`, `relative_masks` and `resident_stores` (per loop like `backend`) are kept
        for the Gluon loops only, and left out where false for all. Each Gluon kernel's Triton-only
        knobs take their neutral values (`compiled` says which sites and device
        loops are whose).
        The search offers it where discovery found the form it lowers (`Discovery.gluon_rows`), with
        one or two groups (SEARCHED_CONSUMER_GROUPS)."""
        backends = self.per_loop(fields, "backend")
        flags = {flag: [v and b == "gluon" for v, b in zip(self.per_loop(fields, flag), backends)]
                 for flag in self.GLUON_FLAGS}
        for name in ("backend", *flags):
            fields.pop(name, None)
        groups = fields.pop("consumer_groups", None)
        if "gluon" not in backends:
            return
        for flag, values in flags.items():
            if any(values):  # left out where no Gluon kernel takes it (the default)
                fields[flag] = values[0] if len(set(values)) == 1 else values
        groups = 2 if groups is None else groups
        if groups not in CONSUMER_GROUPS:
            raise exc.InvalidConfig(f"consumer_groups {groups!r} is not one of {CONSUMER_GROUPS}")
        uniform = len(set(backends)) == 1
        fields["backend"], fields["consumer_groups"] = backends[0] if uniform else backends, groups
        if fields["pid_type"] == "xyz":  # one grid axis: a persistent program's tile loop or one tile each
            fields["pid_type"] = "flat"
        # the depth of the rings of streamed tiles: 2 to 4 (a slot read by an accumulating dot,
        # like the backward's, is released a step later than one only the first dots read)
        fields["num_stages"] = min(max(fields["num_stages"], 2), 4)
        depths = list(fields["range_num_stages"])
        for kernel in {k for k, backend in enumerate(backends) if backend == "gluon"}:
            loops = [loop for loop, k in enumerate(compiled.device_loop_kernels) if k == kernel]
            depth = next((min(max(int(depths[loop]), 2), 4) for loop in loops if depths[loop]), 0)
            for loop in loops:
                depths[loop] = 0 if depth == fields["num_stages"] else depth
        fields["range_num_stages"] = depths
        for block in self._warpgroup_row_blocks(backends):  # 64 rows per warpgroup
            fields["block_sizes"][block] = 64 * groups
        # the lowering takes a Triton kernel's pointer loads (it makes them TMA copies), walks a
        # persistent grid's tiles in a loop of its own and ignores Triton's warp specialization: in
        # each Gluon kernel those knobs take their neutral values (also beside Triton kernels, whose
        # descriptors or flattened tile loop it could not lower), so that a Triton config with the
        # back end switched normalizes to one config; where every kernel is Gluon, its warps too
        gluon = {kernel for kernel, backend in enumerate(backends) if backend == "gluon"}
        fields["indexing"] = ["pointer" if compiled.site_kernels[site] in gluon else value
                              for site, value in enumerate(fields["indexing"])]
        fields["store_subtiles"] = [1 if compiled.site_kernels[compiled.store_sites[store]] in gluon else value
                                    for store, value in enumerate(fields["store_subtiles"])]
        fields["range_warp_specializes"] = [None if compiled.device_loop_kernels[loop] in gluon else value
                                            for loop, value in enumerate(fields["range_warp_specializes"])]
        fields["persistent_flattens"] = [value and kernel not in gluon
                                         for kernel, value in enumerate(fields["persistent_flattens"])]
        if uniform:
            fields["num_warps"] = 4

    @staticmethod
    def _maxnreg(fields: dict) -> None:
        """`maxnreg`: the registers per thread that every kernel of the config compiles under
        (Triton's option of that name: ptxas allocates at most that many, so more CTAs fit an SM),
        a multiple of 8 from 24 to 256; left out where None (the compiler's choice). A Gluon
        kernel's consumer warpgroups then take what the cap leaves beside the loader
        (gluon_lowering.consumer_registers). The search does not offer it: under a cap below what
        an instruction needs ptxas fails (C7602, "Insufficient registers": a D128 Gluon forward
        at 128), so random configs would not all compile; table entries set it, measured by
        tools/config_probe.py."""
        value = fields.pop("maxnreg", None)
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value % 8 or not 24 <= value <= 256:
            raise exc.InvalidConfig(f"maxnreg {value!r}: a multiple of 8 from 24 to 256, or None")
        fields["maxnreg"] = value

    def _scalar_defaults(self) -> dict:
        f = self.found
        has_dot = any(b.in_dot for b in f.blocks)
        biggest = max([triton.next_power_of_2(s) for s in f.rdims if s <= 8192] + [1])
        return {"num_warps": 8 if biggest >= 4096 else 4, "num_stages": 3 if has_dot else 2, "pid_type": "flat",
                "static_reduction_sizes": False}

    def _check_lengths(self, fields: dict, compiled: Discovery) -> None:
        """A list knob has one entry per position; a list of PER_STRUCTURE_KNOBS may be sized by any
        structure the tunables compile (a config of one structure with its tunables moved to
        another) or by the search's knobs (the most of any structure)."""
        expected = {
            "block_sizes": len(self.found.blocks),
            "loop_orders": sum(1 for n in self.found.top_loops if n > 1),
            "l2_groupings": sum(1 for n in self.found.top_loops if n > 1),
            "flatten_loops": self.found.flatten_count,
            "persistent_flattens": len(self.found.top_loops),
            "tile_reversals": len(self.found.top_loops),
        }
        for name, count in expected.items():
            value = fields.get(name)
            if isinstance(value, list) and value and len(value) != count:
                raise exc.InvalidConfig(f"{name} has {len(value)} entries; this kernel has {count}")
        for name in ("reduction_loops", "indexing", "load_eviction_policies", "store_subtiles"):
            value = fields.get(name)
            if not isinstance(value, list) or not value:
                continue
            allowed = {positions(compiled)[name], positions(self.found)[name]}
            if len(value) not in allowed:
                allowed |= {positions(s)[name] for s in self.structures()}
                allowed |= {sum(1 for knob in self._knobs if knob.name == name)}
            if len(value) not in allowed:
                raise exc.InvalidConfig(f"{name} has {len(value)} entries; the structure these tunables compile "
                                        f"has {positions(compiled)[name]}")

    def _default_blocks(self) -> list[int]:
        f = self.found
        has_dot = any(b.in_dot for b in f.blocks)
        top_dims = max(f.top_loops, default=1)
        blocks = []
        for i, info in enumerate(f.blocks):
            choices = self.block_range(i)
            if info.in_dot:
                want = 64
            elif info.device_loop:
                want = 64 if has_dot else 1024
            elif f.rdims or f.device_loops:
                want = 1
            else:
                want = {1: 1024, 2: 32, 3: 8}.get(top_dims, 4)
            blocks.append(min(max(want, choices[0]), choices[-1]))
        return blocks

    @staticmethod
    def _tensor_volume(key: tuple, blocks: list[int], reductions: Any, compiled: Discovery, cap: int | None = None) -> int:
        """Elements of a device tensor with dims `key` (values.shape_key) under `blocks`; a reduction
        dim counts its chunk when looped, else its padded size (at most `cap`)."""
        tiles, reduction = 1, 1
        for kind, value in key:
            if kind == "block":
                tiles *= blocks[value] if value < len(blocks) else 1
            elif kind == "fixed":
                tiles *= value
            else:
                chunk = reductions[value] if reductions and value < len(reductions) else None
                reduction *= chunk if chunk else triton.next_power_of_2(max(compiled.rdims[value], 1))
        return tiles * (min(reduction, cap) if cap else reduction)

    def _largest_volume(self, blocks: list[int], reductions: Any, compiled: Discovery) -> int:
        return max((self._tensor_volume(k, blocks, reductions, compiled) for k in compiled.tensor_shapes), default=1)

    def _max_warps(self, blocks: list[int], reductions: Any, compiled: Discovery) -> int:
        """More warps than a program's largest tensor has elements (32 per warp) only idles threads,
        and Triton 3.6's compiler asserts on some such configs (e.g. 16 warps over a 1x2 tile with
        reductions). A matrix product's result keeps at least DOT_ELEMENTS_PER_WARP elements per warp
        beyond 4 warps: Triton 3.6 miscompiled a 64x16 product at 16 and 32 warps (gap 16).
        `compiled`: the structure the config compiles (see found_for)."""
        volume = self._largest_volume(blocks, reductions, compiled)
        dots = [self._tensor_volume(k, blocks, reductions, compiled) for k in compiled.dot_shapes]
        warps = 1
        while warps * 2 * 32 <= volume and warps < 32 \
                and (warps < 4 or all(warps * 2 * DOT_ELEMENTS_PER_WARP <= v for v in dots)):
            warps *= 2
        return warps

    def _min_warps(self, blocks: list[int], reductions: Any, compiled: Discovery) -> int:
        """The fewest warps that hold the program's largest tensor with at most
        MAX_ELEMENTS_PER_THREAD elements per thread, and its largest matrix product's result with
        at most MAX_DOT_ELEMENTS_PER_THREAD (at most 32 warps)."""
        volume = self._largest_volume(blocks, reductions, compiled)
        dot = max((self._tensor_volume(k, blocks, reductions, compiled) for k in compiled.dot_shapes), default=0)
        warps = 1
        while (warps * 32 * MAX_ELEMENTS_PER_THREAD < volume or warps * 32 * MAX_DOT_ELEMENTS_PER_THREAD < dot) \
                and warps < 32:
            warps *= 2
        return warps

    def _cap_volume(self, blocks: list[int], reductions: Any, compiled: Discovery) -> list[int]:
        """Halves the largest block of an over-full tensor until every device tensor of the structure
        the config compiles (`compiled`, see found_for) stays within a compilable volume. Reduction
        dims count up to the cap: a reduction alone is never capped."""
        infos = [compiled.blocks[i] if i < len(compiled.blocks) else info for i, info in enumerate(self.found.blocks)]
        cap = MAX_DOT_VOLUME if any(b.in_dot for b in infos) else MAX_VOLUME
        floor = [16 if b.in_dot else 1 for b in infos]
        blocks = list(blocks)
        while True:
            over = {i for key in compiled.tensor_shapes
                    if self._tensor_volume(key, blocks, reductions, compiled, cap) > cap
                    for kind, i in key if kind == "block" and i < len(blocks) and blocks[i] > floor[i]}
            if not over:
                return blocks
            i = max(sorted(over), key=lambda j: blocks[j])
            blocks[i] //= 2

    def random_config(self, seed: int | random.Random | None = None, max_tiles: int | None = None,
                      backends: tuple | None = None) -> Config:
        """Every knob drawn from its choices (deterministic per seed). With `max_tiles`, block sizes
        and reduction chunks are drawn only among the choices of at least 1/max_tiles of the knob's
        largest (the dimension rounded up to a power of two, or the block's bound), so each
        dimension is cut into at most about that many tiles; a whole-dimension reduction (None)
        stays a choice. For runs where every program costs, such as Triton's CPU interpreter.
        `backends` limits the back ends drawn to those (the ones the device to run on runs)."""
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        values = []
        for knob in self._knobs:
            choices = knob.choices
            if knob.name == "backend" and backends is not None:
                choices = [c for c in choices if c in backends]
            if max_tiles is not None and knob.name in ("block_sizes", "reduction_loops") and any(choices):
                largest = max(c for c in choices if c)
                choices = [c for c in choices if not c or c * max_tiles >= largest]
            values.append(rng.choice(choices))
        return self.unflatten(values)
