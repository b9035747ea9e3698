"""The `backend: "gluon"` config (build_tools/dsl/gluon_lowering.py): kernels of the loop form it takes
(the attention forward, and the backward's dq and dk/dv kernels) lowered to warp-specialized Gluon. Gluon has no interpreter, so on a machine without a GPU the
lowered kernels are cross-compiled for sm_90 (all of Triton's passes and ptxas). Their values are
checked on the GPU (`-m gpu`, HK_TEST_DEVICE=cuda) against float64."""
import itertools
import json
import math
import re

import pytest
import torch
import triton

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl import exc
from build_tools.dsl.gluon_lowering import consumer_registers
from build_tools.dsl.launch_helpers import _compile_options
from build_tools.dsl.module import HELPERS
from kernels_src.attention import attention_bwd, attention_fwd, make_bwd_inputs, reference_bwd, tolerance_bwd

from ._harness import poisoned_allocations, results_without_interpreter


def gluon_config(causal: bool, groups: int = 2, stages: int = 2, branch: bool = False) -> dict:
    """The forward's Gluon config; `branch`: one key loop, the causal mask under a branch
    (`diagonal_branch`) instead of a second loop for the diagonal."""
    loops = 2 if causal and not branch else 1
    return {"block_sizes": [64 * groups, 128], "num_stages": stages, "range_peel_tails": [True] * loops,
            "backend": "gluon", "consumer_groups": groups, "diagonal_branch": branch}


def attention_args(batch, heads, kv_heads, q_len, kv_len, head_dim, causal, device="cpu", dtype=torch.float16):
    gen = torch.Generator(device=device).manual_seed(q_len * 31 + kv_len)
    q = torch.randn(batch, heads, q_len, head_dim, dtype=dtype, device=device, generator=gen)
    k = torch.randn(batch, kv_heads, kv_len, head_dim, dtype=dtype, device=device, generator=gen)
    v = torch.randn(batch, kv_heads, kv_len, head_dim, dtype=dtype, device=device, generator=gen)
    return q, k, v, causal, 1 / math.sqrt(head_dim)


def gluon_bwd_config(causal: bool, query_block: int = 32, stages: int = 3, peel: bool = False,
                     branch: tuple = (False, False), groups: int = 2) -> dict:
    """The backward's blocks: dq's rows and key tiles, dk/dv's key rows and query tiles. `branch`:
    (dq, dk/dv) in one loop each with the causal mask under a branch, instead of a loop of its own."""
    loops = 3 + (2 - sum(branch) if causal else 0)
    return {"block_sizes": [64 * groups, 64, 64 * groups, query_block], "num_stages": stages,
            "range_peel_tails": [peel] * loops, "backend": "gluon", "consumer_groups": groups,
            "dq_diagonal_branch": branch[0], "dkv_diagonal_branch": branch[1]}


def shipped_peel(causal: bool) -> list:
    """`range_peel_tails` of the H200 table's D128 backward entries: dq's loops and dk/dv's loop over
    the queries after the diagonal peeled, dk/dv's diagonal loop not (peeled, ptxas serializes the
    kernel's wgmmas)."""
    return [True, True, False, False, True] if causal else [True, False, True]


def bwd_shape(batch, heads, kv_heads, q_len, kv_len, head_dim, causal) -> dict:
    return {"B": batch, "H": heads, "Hkv": kv_heads, "Sq": q_len, "Sk": kv_len, "D": head_dim, "causal": causal}


# (causal, head dim, consumer groups, pid_type, diagonal_branch)
CROSS_CASES = [(False, 64, 2, "flat", False), (True, 64, 2, "flat", False), (False, 128, 1, "flat", False),
               (True, 128, 2, "flat", False), (True, 128, 2, "persistent_interleaved", False),
               (True, 128, 2, "persistent_dynamic", False), (True, 128, 2, "persistent_dynamic", True),
               (True, 64, 1, "flat", True), (True, 64, 3, "flat", True)]
# (causal, head dim, consumer groups): the forward with `lazy_rescale`
LAZY_CROSS_CASES = [(False, 128, 2), (True, 64, 1)]
# (causal, head dim, consumer groups): the forward with its row sums as products with ones (`row_sum_dot`)
ROW_SUM_CROSS_CASES = [(False, 64, 1), (True, 64, 2)]
# causal, queries, shared, (dq, dk/dv) masks under branches
BWD_CROSS_CASES = [(False, 32, False, (False, False)), (True, 32, False, (False, False)), (False, 64, True, (False, False)),
                   (True, 64, True, (False, False)), (True, 32, False, (True, True))]
# (causal, resident_stores, (dq, dk/dv) ring depth, peeled): both D128 backward kernels on a drawn
# persistent grid; peeled: the H200 table's form (shipped_peel)
PERSISTENT_BWD_CROSS_CASES = [(True, True, (3, 3), False), (False, True, (3, 4), False), (True, False, (3, 3), False),
                              (True, True, (3, 4), True)]
SM90_SHARED_MEMORY = 232448  # the most dynamic shared memory a CTA may take on sm_90 (227 KiB)
# (causal, consumer groups): the D64 forward with 64-key tiles compiled under maxnreg 80
CAPPED_CROSS_CASES = [(True, 1), (False, 2)]
CAP = 80


def cross_compile_cases() -> dict:
    """Runs in a process without TRITON_INTERPRET: compiles each lowered case for sm_90."""
    from build_tools.cross_compile import CrossCompileError, cross_compile

    cases = []  # (key, kernel, args, config)
    for causal, head_dim, groups, pid_type, branch in CROSS_CASES:
        cases.append((f"{causal}-{head_dim}-{groups}-{pid_type}" + ("-branch" if branch else ""), attention_fwd,
                      attention_args(1, 2, 2, 256, 256, head_dim, causal),
                      {**gluon_config(causal, groups, branch=branch), "pid_type": pid_type}))
    for causal, head_dim, groups in LAZY_CROSS_CASES:
        cases.append((f"{causal}-{head_dim}-{groups}-flat-lazy", attention_fwd, attention_args(1, 2, 2, 256, 256, head_dim, causal),
                      {**gluon_config(causal, groups), "lazy_rescale": True}))
    for causal, head_dim, groups in ROW_SUM_CROSS_CASES:
        cases.append((f"{causal}-{head_dim}-{groups}-flat-rowsum", attention_fwd,
                      attention_args(1, 2, 2, 256, 256, head_dim, causal),
                      {**gluon_config(causal, groups), "row_sum_dot": True, "block_sizes": [64 * groups, 64 if head_dim == 64 else 128]}))
    for causal, groups in CAPPED_CROSS_CASES:
        cases.append((f"capped-{causal}-{groups}", attention_fwd, attention_args(1, 2, 2, 256, 256, 64, causal),
                      {**gluon_config(causal, groups), "block_sizes": [64 * groups, 64], "maxnreg": CAP}))
    for causal, queries, shared, branch in BWD_CROSS_CASES:
        cases.append((f"bwd-{causal}-{queries}-{shared}-{branch}", attention_bwd,
                      make_bwd_inputs(bwd_shape(1, 2, 1, 256, 256, 128, causal), torch.float16, "cpu", 0),
                      {**gluon_bwd_config(causal, queries, branch=branch), "shared_operands": [False, shared]}))
    for causal, resident, (dq_depth, dkv_depth), peeled in PERSISTENT_BWD_CROSS_CASES:
        config = {**gluon_bwd_config(causal, stages=dkv_depth), "pid_type": "persistent_dynamic", "resident_stores": resident}
        config["range_num_stages"] = [dq_depth] + [0] * (len(config["range_peel_tails"]) - 1)
        if peeled:
            config["range_peel_tails"] = shipped_peel(causal)
        cases.append((f"bwd-persistent-{causal}-{resident}-{dq_depth}-{dkv_depth}-{peeled}", attention_bwd,
                      make_bwd_inputs(bwd_shape(1, 2, 1, 256, 256, 128, causal), torch.float16, "cpu", 0), config))
    results = {}
    for key, kernel, args, config in cases:
        try:
            compiled = cross_compile(kernel.bind(args), args, config)
        except CrossCompileError as err:
            results[key] = {"error": str(err)}
            continue
        results[key] = [{**c.features(), **c.ptxas_info(), "shared_memory": c.shared_memory} for c in compiled]
    return results


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_lowered_attention_compiles_for_sm90():
    results = results_without_interpreter("tests.dsl.test_gluon_backend", timeout=900)
    failed = {key: r["error"] for key, r in results.items() if "error" in r}
    assert not failed, failed
    for key, kernels in results.items():
        if key.startswith(("bwd-", "capped-")):
            continue
        assert len(kernels) == 1, key
        (kernel,) = kernels
        # a loader partition at 24 registers beside wgmma consumers; each consumer stores its rows of
        # the output by TMA. Nothing spills, except on a persistent grid a few of the tile loop's
        # scalars, once per tile (none inside the device loops: their SASS, 2026-11-27). The causal
        # mask under a branch, with the previous tile's P@V in flight, leaves the wgmmas unserialized,
        # and so does the accumulator's multiply under one (`lazy_rescale`, after the P@V's wait).
        assert kernel["warp_specialize"] and kernel["wgmma"] and 24 in kernel["setmaxnreg"], key
        assert not kernel["wgmma_serialized"], key
        groups, persistent = int(key.split("-")[2]), "persistent" in key
        assert kernel["tma_loads"] >= 3 and kernel["tma_stores"] == groups, key
        assert kernel["spill_stores"] <= (64 if persistent else 0), key


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_lowered_attention_backward_compiles_for_sm90():
    """Both kernels of the backward lower: dq (two fresh dots, dO also read in registers for
    delta) and dk/dv (four dots in a loop over the query heads of a kv head, two of them fresh).
    dq fits its 240 registers. dk/dv holds two [64, D] accumulators per consumer beside the scores
    and dP; its lse and delta columns come from the loader's row copies. With 32-query tiles it
    spills 16 bytes causal, 0 non-causal. With 64-query tiles and P and dS in registers ptxas
    serializes its wgmmas; staged in shared memory they are not, and it spills 328 bytes
    non-causal, 840 causal (2026-11-27)."""
    results = results_without_interpreter("tests.dsl.test_gluon_backend", timeout=900)
    for causal, queries, shared, branch in BWD_CROSS_CASES:
        key = f"bwd-{causal}-{queries}-{shared}-{branch}"
        kernels = results[key]
        assert "error" not in kernels, kernels
        dq, dkdv = kernels
        for kernel in kernels:
            assert kernel["warp_specialize"] and kernel["wgmma"] and 24 in kernel["setmaxnreg"], key
            assert not kernel["wgmma_serialized"], key
        assert dq["tma_stores"] == 2 and dkdv["tma_stores"] == 4, key  # dq; dk and dv, per warpgroup
        bound = {32: 32 if causal else 0, 64: 1024 if causal else 512}[queries]
        assert dq["spill_stores"] == 0 and dkdv["spill_stores"] <= bound, (key, dq, dkdv)


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_persistent_backward_fits_shared_memory_with_resident_stores():
    """On a persistent grid each D128 backward kernel holds two resident slots. With its stores
    staged in them (`resident_stores`) the dq kernel fits three ring stages and dk/dv four in an
    sm_90 CTA's shared memory; with store buffers of their own, three stages do not fit the dq
    kernel. Both compile without serialized wgmmas and without spills in dq; dk/dv, walking two
    query heads a kv head here and unpeeled, spills 180 bytes causal and 8 non-causal (2026-12-03;
    the H200 table's persistent entries as the report compiles them: 0-12 bytes). So does the
    table's causal form with dk/dv's query loop peeled (the forty-third session)."""
    results = results_without_interpreter("tests.dsl.test_gluon_backend", timeout=900)
    for causal, resident, depths, peeled in PERSISTENT_BWD_CROSS_CASES:
        key = f"bwd-persistent-{causal}-{resident}-{depths[0]}-{depths[1]}-{peeled}"
        assert "error" not in results[key], results[key]
        dq, dkdv = results[key]
        for kernel in (dq, dkdv):
            assert kernel["warp_specialize"] and not kernel["wgmma_serialized"], key
        assert dq["spill_stores"] == 0 and dkdv["spill_stores"] <= 256, (key, dq, dkdv)
        if resident:
            assert dq["tma_stores"] == 2 and dkdv["tma_stores"] == 4, key
            assert dq["shared_memory"] <= SM90_SHARED_MEMORY and dkdv["shared_memory"] <= SM90_SHARED_MEMORY, (key, dq, dkdv)
        else:
            assert dq["shared_memory"] > SM90_SHARED_MEMORY, (key, dq)


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_register_cap_shares_registers_between_partitions():
    """Under `maxnreg` ptxas allocates at most that many registers per thread, so several CTAs fit
    an SM: at 80, three of one consumer warpgroup and the loader (8 warps), two of two consumers
    (12 warps). The loader keeps its 24; two consumers take what it leaves, 104 each
    (consumer_registers), one consumer the rest by Triton's own count (136). One consumer holds a
    D64 forward's 64-key step in that without spilling; two spill 48 bytes and ptxas serializes
    their wgmmas (2026-11-28)."""
    results = results_without_interpreter("tests.dsl.test_gluon_backend", timeout=900)
    for causal, groups in CAPPED_CROSS_CASES:
        key = f"capped-{causal}-{groups}"
        assert "error" not in results[key], results[key]
        (kernel,) = results[key]
        assert kernel["warp_specialize"] and kernel["wgmma"] and 24 in kernel["setmaxnreg"], key
        assert kernel["registers"] <= CAP, (key, kernel)
        if groups == 1:
            assert kernel["spill_stores"] == 0, (key, kernel)
        else:
            assert consumer_registers(groups, CAP) in kernel["setmaxnreg"], (key, kernel)


def test_consumer_registers_fit_the_cap():
    assert consumer_registers(2, None) == consumer_registers(1, None) == 240  # the compiler's cap: 168 for 12 warps
    assert consumer_registers(2, 80) == 104  # (80 * 384 - 24 * 128) / 256, rounded down to a multiple of 8
    assert consumer_registers(1, 80) == 136
    assert consumer_registers(1, 256) == 240
    assert consumer_registers(3, None) == consumer_registers(3, 256) == 160  # 16 warps: 128 each at launch
    for groups in (1, 2, 3):
        launch_cap = 65536 // (128 * (groups + 1)) // 8 * 8  # the register file shared by the warpgroups
        for cap in range(24, 257, 8):  # the consumers' and the loader's registers within the cap's
            regs = consumer_registers(groups, cap)
            assert regs % 8 == 0 and regs * groups + 24 <= min(cap, launch_cap) * (groups + 1), (groups, cap)


def test_register_cap_reaches_the_compile():
    """`maxnreg` is part of the kernel's name and set on its function, where the launch helpers
    read it for Triton's compile; a config without it carries nothing."""
    args = attention_args(1, 2, 2, 128, 128, 64, False)
    bound = attention_fwd.bind(args)
    plain = bound.to_triton_code({**gluon_config(False, 1), "block_sizes": [64, 64]})
    capped = bound.to_triton_code({**gluon_config(False, 1), "block_sizes": [64, 64], "maxnreg": 80})
    names = [re.search(r"def (_attention_fwd_gluon_[0-9a-f]+)\(", text).group(1) for text in (plain, capped)]
    assert names[0] != names[1]
    assert "hk_compile_options =" not in plain
    assert f"{names[1]}.fn.hk_compile_options = {{'maxnreg': 80}}" in capped
    triton_capped = bound.to_triton_code({"block_sizes": [64, 64], "maxnreg": 128})
    assert re.search(r"_attention_fwd_kernel_\w+\.fn\.hk_compile_options = \{'maxnreg': 128\}", triton_capped)

    class Kernel:
        def fn():
            pass
    assert _compile_options(Kernel) == {}
    Kernel.fn.hk_compile_options = {"maxnreg": 80}
    assert _compile_options(Kernel) == {"maxnreg": 80}


def partition(source: str, header: str) -> str:
    """The text of the lowered source's partition function whose signature starts with `header`."""
    start = source.index(header)
    return source[start:source.index("@gluon.jit", start)]


def test_lowered_source_is_deterministic():
    args = attention_args(1, 2, 1, 200, 300, 64, True)
    first = attention_fwd.bind(args).to_triton_code(gluon_config(True))
    attention_fwd.reset()
    second = attention_fwd.bind(args).to_triton_code(gluon_config(True))
    assert first == second
    assert "gl.warp_specialize" in first and "_tma_operand(q)" in first


def test_a_gluon_kernels_name_follows_its_lowered_text():
    """Configs that differ only in what the lowering drops (the eviction policies of the loads it
    makes TMA copies) give the same kernel, its name too, so Triton's cache compiles it once."""
    bound = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, False))
    sites = len(bound.config_spec.default_config()["load_eviction_policies"])

    def module_after_header(policies: list) -> str:
        source = bound.to_triton_code({**gluon_config(False), "load_eviction_policies": policies})
        return source[source.index('"""', 3) + 3:]  # the header names the config

    plain = module_after_header([""] * sites)
    assert module_after_header(["evict_first"] * sites) == plain
    assert re.search(r"\ndef _attention_fwd_gluon_[0-9a-f]{10}\(", plain)


def test_turns_advance_only_in_loops_that_take_them():
    """The ping-pong turn barriers' waits test a phase's parity: advancing the turn counter over a
    loop without steps (the causal forward's empty peeled tails) lets the warpgroups pass out of
    turn, and some interleavings then deadlock (it hung on the H100 at B4 H32 S1024, 2026-11-27)."""
    source = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, True)).to_triton_code(gluon_config(True))
    consumer = partition(source, "_consumer(WG")
    lines = consumer.splitlines()
    advances = [i for i, line in enumerate(lines) if line.strip().startswith("t += ")]
    assert len(advances) == 4  # two loops, each with its peeled tail
    for i in advances:
        guard = next(line for line in reversed(lines[:i]) if line.strip().startswith("if n_"))
        indent = len(lines[i]) - len(lines[i].lstrip())
        assert indent > len(guard) - len(guard.lstrip()), lines[i]


def test_persistent_tiles_hand_residents_over_by_slot():
    """On a persistent grid the loader fills tile `it`'s residents into slot it % 2 once both
    warpgroups released that slot's previous tile (its phase parity), and each consumer releases
    its slot once per tile: after the tile's last dot, before the epilogue's store. A one-tile grid
    has one slot."""
    args = attention_args(1, 2, 1, 200, 300, 64, True)
    source = attention_fwd.bind(args).to_triton_code({**gluon_config(True), "pid_type": "persistent_interleaved"})
    loader = partition(source, "_loader(")
    consumer = partition(source, "_consumer(WG")
    assert "rslot = it % 2" in loader and "mbarrier.wait(resident_empty.index(rslot), ((it // 2) & 1) ^ 1)" in loader
    assert "mbarrier.wait(resident_bar.index(rslot), (it // 2) & 1)" in consumer
    lines = consumer.splitlines()
    depth = lambda line: len(line) - len(line.lstrip())
    tile_loop = next(i for i, line in enumerate(lines) if line.strip().startswith("for virtual_pid in"))
    (release,) = [i for i, line in enumerate(lines) if "mbarrier.arrive(resident_empty" in line]
    last_dot = max(i for i, line in enumerate(lines) if "warpgroup_mma(" in line)
    store = next(i for i, line in enumerate(lines) if "async_copy_shared_to_global" in line)
    assert depth(lines[release]) == depth(lines[tile_loop]) + 4 and last_dot < release < store
    assert "resident_bar = gl.allocate_shared_memory(gl.int64, [2, 1]" in source
    attention_fwd.reset()
    flat = attention_fwd.bind(args).to_triton_code(gluon_config(True))
    assert "resident_bar = gl.allocate_shared_memory(gl.int64, [1, 1]" in flat and "for virtual_pid" not in flat


def test_resident_stores_stage_in_the_tiles_slot():
    """`resident_stores` (per kernel): on a persistent grid a store whose tile and dtype match a
    resident's is staged in this warpgroup's piece of the tile's own slot, not in a buffer of its
    own, and the consumer releases the slot only once its stores have read it. Without the flag a
    persistent grid allocates the store's buffer; a one-tile grid reuses a resident either way."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    spec = bound.config_spec
    config = {**gluon_bwd_config(True), "pid_type": "persistent_dynamic"}
    assert "resident_stores" not in spec.normalize({**config, "resident_stores": [False, False]})
    assert spec.normalize({**config, "resident_stores": True})["resident_stores"] is True
    mixed = spec.normalize({**config, "backend": ["triton", "gluon"], "resident_stores": True})
    assert list(mixed["resident_stores"]) == [False, True]
    assert [k.choices for k in spec.knobs() if k.name == "resident_stores"] == [(False, True)] * 2
    source = bound.to_triton_code({**config, "resident_stores": [False, True]})
    dq_kernel, dkdv_kernel = re.findall(r"def (_attention_bwd_gluon_[0-9a-f]+)_loader\(", source)
    dq = source[source.index(f"def {dq_kernel}_loader("):source.index(f"def {dkdv_kernel}_loader(")]
    dkdv = source[source.index(f"def {dkdv_kernel}_loader("):]
    assert "store_0_smem = gl.allocate_shared_memory(" in dq  # dq: a buffer of its own
    assert "store_0_smem" not in dkdv and "store_1_smem" not in dkdv
    consumer = partition(source, f"def {dkdv_kernel}_consumer(WG")
    lines = [line.strip() for line in consumer.splitlines()]
    stores = [i for i, line in enumerate(lines) if line.startswith("tma.async_copy_shared_to_global(")]
    assert len(stores) == 2 and all(lines[i].endswith("_smem.index(rslot * GROUPS + WG))") for i in stores)
    (release,) = [i for i, line in enumerate(lines) if line == "mbarrier.arrive(resident_empty.index(rslot))"]
    assert release == stores[-1] + 2 and lines[release - 1] == "tma.store_wait(0)"
    flat = attention_bwd.bind(args).to_triton_code({**gluon_bwd_config(True), "resident_stores": True})
    assert "store_0_smem" not in flat and "_smem.index(WG))" in flat


def test_a_gluon_kernels_rings_take_its_loops_range_num_stages():
    """A Gluon kernel's ring depth is its device loops' `range_num_stages` where set (one value per
    kernel, the first set, 2 to 4, given to all its loops; 0 where it equals num_stages), else
    num_stages: here dq's three stages beside dk/dv's four."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    config = {**gluon_bwd_config(True, stages=4), "pid_type": "persistent_dynamic"}
    loops = len(config["range_peel_tails"])  # dq's two loops, then dk/dv's head loop and two
    normalize = bound.config_spec.normalize
    assert list(normalize({**config, "range_num_stages": [0, 3] + [0] * (loops - 2)})["range_num_stages"]) == \
        [3, 3] + [0] * (loops - 2)
    assert list(normalize({**config, "range_num_stages": [5, 1] + [4] * (loops - 2)})["range_num_stages"]) == [0] * loops
    # beside a Triton dk/dv kernel, whose loops keep their own values (Triton's num_stages per loop)
    mixed = normalize({**config, "backend": ["gluon", "triton"], "range_num_stages": [0, 3, 2, 2, 2]})
    assert list(mixed["range_num_stages"]) == [3, 3, 2, 2, 2]
    source = bound.to_triton_code({**config, "range_num_stages": [3] + [0] * (loops - 1)})
    host = source[source.index("def attention_bwd("):]
    depths = [int(m) for m in re.findall(r"\(\d+, \d+, \d+, 2, (\d+), \d+\), 4, 2\)", host)]
    assert depths == [3, 4], host


def test_drawn_tiles_reach_the_consumers_with_their_residents():
    """On a grid whose programs draw their tiles (pid_type "persistent_dynamic") only the loader
    draws: it writes each ticket into the tile's slot of `tile_ids` before the arrival that
    releases the slot's residents, and the ticket past the tiles with a bare arrival; the consumers
    read the ticket after that wait and stop at it. Each tile draws the next ticket once its loads
    are issued. The last program's draw resets the counter."""
    args = attention_args(1, 2, 1, 200, 300, 64, True)
    source = attention_fwd.bind(args).to_triton_code({**gluon_config(True), "pid_type": "persistent_dynamic"})
    loader = partition(source, "_loader(")
    consumer = partition(source, "_consumer(WG")
    lines = [line.strip() for line in loader.splitlines() if line.strip()]
    draws = [i for i, line in enumerate(lines) if line.endswith(" = gl.atomic_add(tickets, 1, sem='relaxed')")]
    publish = [i for i, line in enumerate(lines) if line.startswith("tile_ids.index(rslot).store(")]
    expect = lines.index(next(line for line in lines if line.startswith("mbarrier.expect(resident_bar")))
    last_ring_load = max(i for i, line in enumerate(lines) if "ring_1.index(slot)" in line)
    sentinel = lines.index("mbarrier.arrive(resident_bar.index(rslot))")
    assert len(draws) == 2 and len(publish) == 2 and lines[draws[0] + 1].startswith("while ")
    assert publish[0] < lines.index("gl.thread_barrier()") < expect < last_ring_load < draws[1] < publish[1] < sentinel
    assert lines[-2].startswith("if ") and "gl.num_programs(0) - 1" in lines[-2] and lines[-1] == "gl.store(tickets, 0)"
    body = [line.strip() for line in consumer.splitlines()]
    takes = [i for i, line in enumerate(body) if line.startswith("mbarrier.wait(resident_bar.index(rslot)")]
    assert len(takes) == 2 and body[takes[0] + 1].endswith("gl.max(tile_ids.index(rslot).load(id_layout), 0)")
    assert body[takes[0] + 2].startswith("while ") and "gl.atomic_add" not in consumer
    assert "tile_ids = gl.allocate_shared_memory(gl.int32, [2, 1]" in source


@helion.kernel()
def row_softmax(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m in hl.tile(x.size(0)):
        out[tile_m, :] = torch.softmax(x[tile_m, :].to(torch.float32), dim=1).to(x.dtype)
    return out


@helion.kernel()
def plain_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.size()
    out = torch.empty([m, b.size(1)], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile([m, b.size(1)]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = hl.dot(a[tile_m, tile_k], b[tile_k, tile_n], acc=acc)
        out[tile_m, tile_n] = acc.to(a.dtype)
    return out


def test_kernels_outside_the_form_are_refused():
    x = torch.randn(70, 33, dtype=torch.float16)
    with pytest.raises(exc.NotSupported, match='backend "gluon": no device loop'):
        row_softmax.bind((x,)).to_triton_code({"backend": "gluon"})
    a, b = torch.randn(128, 96, dtype=torch.float16), torch.randn(96, 64, dtype=torch.float16)
    with pytest.raises(exc.NotSupported, match='backend "gluon"'):
        plain_matmul.bind((a, b)).to_triton_code({"block_sizes": [128, 64, 32], "backend": "gluon"})


def test_invalid_gluon_configs_raise():
    args = attention_args(1, 2, 2, 128, 128, 64, False)
    bound = attention_fwd.bind(args)
    with pytest.raises(exc.InvalidConfig, match="backend"):
        bound.to_triton_code({**gluon_config(False), "backend": "cuda"})
    with pytest.raises(exc.InvalidConfig, match="consumer_groups"):
        bound.to_triton_code({**gluon_config(False), "consumer_groups": 4})
    # the row block follows the consumer groups, and the grid has one axis
    normalized = bound.config_spec.normalize({**gluon_config(False), "block_sizes": [64, 128], "pid_type": "xyz"})
    assert normalized["block_sizes"][0] == 128 and normalized["pid_type"] == "flat"
    three = bound.config_spec.normalize(gluon_config(False, groups=3))  # 192 rows, though not a power of two
    assert three["block_sizes"][0] == 192 and bound.config_spec.normalize(three) == three
    with pytest.raises(exc.InvalidConfig, match="power of two"):  # the key block stays a power of two
        bound.config_spec.normalize({**gluon_config(False, groups=3), "block_sizes": [192, 96]})
    persistent = bound.config_spec.normalize({**gluon_config(False), "pid_type": "persistent_blocked"})
    assert persistent["pid_type"] == "persistent_blocked" and list(persistent["persistent_flattens"]) == [False]
    fp32 = attention_args(1, 2, 2, 128, 128, 64, False, dtype=torch.float32)
    with pytest.raises(exc.NotSupported, match="float16 or bfloat16"):
        attention_fwd.bind(fp32).to_triton_code(gluon_config(False))


def test_a_backend_per_kernel():
    """Each top-level loop is its own kernel, so `backend` may name one per loop: the backward's dq
    kernel in Gluon beside its Triton dk/dv kernel. A list of one name is that name; only the Gluon
    loops' row blocks take the consumer groups' rows, and the Triton kernel keeps its warps."""
    from helion_kernels._arch import runs_backend

    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    base = {"block_sizes": [64, 32, 64, 32], "num_warps": 8, "num_stages": 3}
    mixed = bound.config_spec.normalize({**base, "backend": ["gluon", "triton"]})
    assert list(mixed["backend"]) == ["gluon", "triton"] and list(mixed["block_sizes"]) == [128, 32, 64, 32]
    assert mixed["num_warps"] == 8 and mixed["consumer_groups"] == 2
    assert bound.config_spec.normalize({**base, "backend": ["gluon", "gluon"]})["backend"] == "gluon"
    assert "backend" not in bound.config_spec.normalize({**base, "backend": ["triton", "triton"]})
    with pytest.raises(exc.InvalidConfig, match="one per top-level loop"):
        bound.config_spec.normalize({**base, "backend": ["gluon"]})
    offered = [k.choices for k in bound.config_spec.knobs() if k.name == "backend"]
    assert offered == [("triton", "gluon"), ("triton", "gluon")]
    source = bound.to_triton_code(mixed)
    assert source.count("gl.warp_specialize(") == 1 and source.count("@triton.jit") + source.count(
        "@_jit_on_first_launch\ndef _attention_bwd_kernel") == 1
    cpu = torch.device("cpu")
    assert runs_backend(["triton", "triton"], cpu) and not runs_backend(["gluon", "triton"], cpu)


def test_gluon_kernels_beside_triton_ones_take_neutral_triton_knobs():
    """With a back end per kernel, a Gluon kernel's sites load by pointer (the lowering makes its TMA
    copies), its persistent tile loop is not flattened and Triton does not warp-specialize its loops;
    the Triton kernel beside it keeps those knobs. Random configs that draw Gluon for a kernel lower
    (a descriptor or a flattened tile loop in a Gluon kernel failed to, 2026-11-28)."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    spec = bound.config_spec
    config = spec.normalize({"block_sizes": [64, 32, 64, 32], "backend": ["gluon", "triton"],
                             "pid_type": "persistent_interleaved", "indexing": "tensor_descriptor",
                             "persistent_flattens": [True, True], "range_warp_specializes": [True] * 5})
    found = spec.found_for(dict(config))
    assert set(found.site_kernels) == {0, 1} and set(found.device_loop_kernels) == {0, 1}
    assert [value for value, kernel in zip(config["indexing"], found.site_kernels) if kernel == 0] == \
        ["pointer"] * found.site_kernels.count(0)
    assert set(value for value, kernel in zip(config["indexing"], found.site_kernels) if kernel == 1) == {"tensor_descriptor"}
    assert list(config["persistent_flattens"]) == [False, True]
    assert all(value is None for value, kernel in zip(config["range_warp_specializes"], found.device_loop_kernels)
               if kernel == 0)
    assert bound.to_triton_code(config).count("gl.warp_specialize(") == 1
    drawn = [spec.random_config(seed, backends=("triton", "gluon")) for seed in range(24)]
    drawn = [config for config in drawn if "gluon" in str(config.get("backend"))]
    assert len(drawn) >= 6
    for config in drawn:
        assert "gl.warp_specialize(" in bound.to_triton_code(config), dict(config)


def test_shared_operands_per_kernel():
    """`shared_operands`: the accumulating dots of a Gluon kernel read their register operand (P,
    dS) from a shared-memory tile each warpgroup writes once the dots that read the previous one
    are done. One bool or one per kernel; left out where no Gluon kernel takes it."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    spec = bound.config_spec
    config = gluon_bwd_config(True)
    assert "shared_operands" not in spec.normalize({**config, "shared_operands": [False, False]})
    assert spec.normalize({**config, "shared_operands": [True, True]})["shared_operands"] is True
    mixed = spec.normalize({**config, "backend": ["gluon", "triton"], "shared_operands": True})
    assert list(mixed["shared_operands"]) == [True, False]
    assert "shared_operands" not in spec.normalize({**config, "backend": "triton", "shared_operands": True})
    with pytest.raises(exc.InvalidConfig, match="shared_operands"):
        spec.normalize({**config, "shared_operands": [True]})
    assert [k.choices for k in spec.knobs() if k.name == "shared_operands"] == [(False, True)] * 2
    source = bound.to_triton_code({**config, "shared_operands": [False, True]})
    dq, dkdv = (partition(source, header) for header in re.findall(r"def (\w+_consumer)\(WG", source))
    assert "operand_0" not in dq and "pend_a0 = gl.convert_layout" in dq
    # two dots, each issued in the steps and the drain of the causal kernel's two loops
    assert "pend_a0 =" not in dkdv and dkdv.count("warpgroup_mma(operand_") == 8


def test_relative_masks_per_kernel():
    """`relative_masks`: a comparison of two tile indices (the causal mask) compares the bare
    column indices against the row indices less the column offset, whichever side the columns
    are on; a bound mask (an index against a scalar) keeps its form. One bool or one per kernel;
    left out where no Gluon kernel takes it."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    spec = bound.config_spec
    config = gluon_bwd_config(True)
    assert "relative_masks" not in spec.normalize({**config, "relative_masks": [False, False]})
    assert spec.normalize({**config, "relative_masks": [True, True]})["relative_masks"] is True
    mixed = spec.normalize({**config, "backend": ["gluon", "triton"], "relative_masks": True})
    assert list(mixed["relative_masks"]) == [True, False]
    with pytest.raises(exc.InvalidConfig, match="relative_masks"):
        spec.normalize({**config, "relative_masks": [1, 0]})
    assert [k.choices for k in spec.knobs() if k.name == "relative_masks"] == [(False, True)] * 2
    source = bound.to_triton_code({**config, "relative_masks": [True, False]})
    dq, dkdv = (partition(source, header) for header in re.findall(r"def (\w+_consumer)\(WG", source))
    column = r"gl\.arange\(0, _BLOCK_SIZE_\d, gl\.SliceLayout\(0, s_layout\)\)"
    # dq: the causal where of its diagonal loop, in the first step and the steady step, compares
    # the bare column indices against the rows less the loop's offset; dk/dv keeps its form
    relative = re.findall(rf"gl\.where\(\(\({column}\[None, :\] <= \(\(\(\(offset_\d+ \+ .*?\)\[:, None\]\) - offset_\d+\)\)\)", dq)
    assert len(relative) == 2 and not re.search(rf"{column}\[None, :\] <=", dkdv)
    # dk/dv's mask has its column side on the right: that side is left bare and its offset moves left
    source = bound.to_triton_code({**config, "relative_masks": [False, True]})
    dq, dkdv = (partition(source, header) for header in re.findall(r"def (\w+_consumer)\(WG", source))
    assert not re.search(rf"{column}\[None, :\] <=", dq)
    assert len(re.findall(rf"\[:, None\]\) - offset_\d+\) <= {column}\[None, :\]\)", dkdv)) == 2
    fwd = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, True))
    plain, moved = (partition(fwd.to_triton_code({**gluon_config(True), "relative_masks": flag}), "_consumer(WG")
                    for flag in (False, True))
    # the forward's diagonal loop and its peeled tail: four causal wheres; the tails' bound masks
    # (an index against a scalar) as they were
    assert len(re.findall(rf"{column}\[None, :\] <=", moved)) == 4 and not re.search(rf"{column}\[None, :\] <=", plain)
    bound = re.compile(rf"\(offset_\d+ \+ {column}\)\) < v_\d+")
    assert len(bound.findall(moved)) == len(bound.findall(plain)) > 0


def test_diagonal_branch_lowers_to_a_branch():
    """`diagonal_branch`: the causal forward in one key loop whose mask sits under a run-time branch
    taken by the key tiles that reach past the query tile's first row. In each consumer step the
    where stays inside the branch, and every loop step keeps its dots outside it. The branch
    reassigns a copy of the fresh scores dot (the kernel scales inside the exponential), which
    lowers as elementwise code."""
    fwd = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, True))
    source = fwd.to_triton_code({**gluon_config(True, branch=True), "relative_masks": True})
    lines = partition(source, "_consumer(WG").splitlines()
    wheres = [i for i, line in enumerate(lines) if "gl.where(" in line and "<=" in line]
    # the loop's first step and steady step, and the same two of its peeled tail
    assert len(wheres) == 4
    for i in wheres:
        test = lines[i - 1].strip()
        assert re.fullmatch(r"if v_\d+:", test), lines[i - 1]
        assert re.fullmatch(r"scores_\d+ = dot_\d+", lines[i - 2].strip()), lines[i - 2]
        name = test[3:-1]
        definition = next(line for line in reversed(lines[:i]) if line.strip().startswith(f"{name} = "))
        assert re.search(r"end_\d+ > offset_\d+$", definition.strip()), definition
        indent = len(lines[i - 1]) - len(lines[i - 1].lstrip())
        block = list(itertools.takewhile(lambda line: len(line) - len(line.lstrip()) > indent, lines[i:]))
        assert block[0] == lines[i] and all(re.fullmatch(r"\s*\w+ = .*", line) and "warpgroup_mma" not in line
                                            for line in block), block
    # one device loop (and its tail): two turn advances, against four with the diagonal loop
    assert sum(line.strip().startswith("t += ") for line in lines) == 2


def test_lazy_rescale_lowers_the_accumulator_multiply_to_a_branch():
    """`lazy_rescale`: each consumer step decides from its warpgroup's rows (a reduction over them
    to a scalar) whether the running maximum moves; only then does it multiply the accumulator, in a
    branch after the wait for the previous tile's P@V and before that accumulator becomes the next
    P@V's input. The probabilities and row sums stay outside the branch."""
    args = attention_args(1, 2, 1, 200, 300, 64, False)
    source = attention_fwd.bind(args).to_triton_code({**gluon_config(False), "lazy_rescale": True})
    lines = [line.strip() for line in partition(source, "_consumer(WG").splitlines()]
    tests = [i for i, line in enumerate(lines) if re.fullmatch(r"if v_\d+:", line)]
    assert len(tests) == 4  # the loop's first step and its steady step, and the same two of its peeled tail
    steady = tests[1]
    name = lines[steady][3:-1]
    definition = next(line for line in reversed(lines[:steady]) if line.startswith(f"{name} = "))
    reduced = re.fullmatch(rf"{name} = \((red_\d+) > 8\.0\)", definition).group(1)
    assert any(re.match(rf"{reduced} = gl\.reduce\(.*, 0, _max_\w+\)$", line) for line in lines), reduced
    wait = max(i for i, line in enumerate(lines[:steady]) if re.match(r"acc_\d+ = warpgroup_mma_wait\(0, ", line))
    accumulator = lines[wait].split(" = ")[0]
    assert lines[steady + 1].startswith("v_") and f"{accumulator} * " in lines[steady + 1]
    assert lines[steady + 2] == f"{accumulator} = {lines[steady + 1].split(' = ')[0]}"
    assert next(line for line in lines[steady + 3:] if line.startswith("pend_acc0 = ")) == f"pend_acc0 = {accumulator}"
    assert not any("gl.exp2(" in line for line in lines[wait:steady])


def test_row_sum_dot_lowers_to_a_product_with_ones_in_shared_memory():
    """`row_sum_dot`: the ones tile is a constant B operand. Each consumer warpgroup writes its own
    copy into shared memory once, before any dot; every step issues the sum's wgmma beside the P@V,
    from the same probabilities (moved, not recomputed), into an accumulator of its own width and
    layout; the loader never copies it, and no ring slot waits for it."""
    args = attention_args(1, 2, 1, 200, 300, 64, True)
    source = attention_fwd.bind(args).to_triton_code({**gluon_config(True, 1, branch=True), "row_sum_dot": True,
                                                      "block_sizes": [64, 64]})
    consumer = [line.strip() for line in partition(source, "_consumer(WG").splitlines()]
    assert re.search(r"const_0 = gl\.allocate_shared_memory\(gl\.(bfloat16|float16), \[GROUPS, _BLOCK_SIZE_1, _RDIM_SIZE_1\]",
                     source)
    fill = consumer.index(next(line for line in consumer if line.startswith("const_0.index(WG).store(gl.full(")))
    assert consumer[fill + 1] == "fence_async_shared()"
    assert fill < min(i for i, line in enumerate(consumer) if "warpgroup_mma(" in line)
    assert "o1_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], " \
           "instr_shape=[16, _RDIM_SIZE_1, 16])" in consumer
    sums = [line for line in consumer if line.startswith("a1_tok = ")]
    assert sums and all(line == "a1_tok = warpgroup_mma(pend_a1, const_0.index(WG), pend_acc1, is_async=True)"
                        for line in sums)
    assert all(line == "pend_a1 = gl.convert_layout(pend_a0, p1_layout)"
               for line in consumer if line.startswith("pend_a1 = "))
    assert not any("gl.sum(" in line for line in consumer)
    loader_body = partition(source, "_loader(").split("\n", 1)[1]
    assert "const_0" not in loader_body


@helion.kernel(static_shapes=False)
def attention_rescaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, form: hl.constexpr) -> torch.Tensor:
    """A one-loop attention forward with its accumulator rescaled in two forms the Gluon lowering
    cannot schedule: "one branch" updates the row maximum in the same branch as the accumulator (the
    probabilities read that maximum, and so would wait for the previous tile's P@V); "after" scales
    the accumulator after its dot (the rotated loop issues a tile's P@V in the next step)."""
    batch, heads, q_len, head_dim = q.size()
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    out = torch.empty_like(q)
    for tile_m, tile_h, tile_b in hl.tile([q_len, heads, batch], block_size=[None, 1, 1]):
        q_tile = q[tile_b.begin, tile_h.begin, tile_m, :]
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.full([tile_m], 1.0, dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        for tile_n in hl.tile(kv_len):
            scores = hl.dot(q_tile, k[tile_b.begin, tile_h.begin, tile_n, :].T, out_dtype=torch.float32)
            new_max = torch.maximum(row_max, torch.amax(scores, dim=1))
            if form == "one branch":
                if torch.amax(new_max - row_max) > 8.0:
                    rescale = torch.exp2(row_max - new_max)
                    row_sum = row_sum * rescale
                    acc = acc * rescale[:, None]
                    row_max = new_max
                probs = torch.exp2(scores - row_max[:, None])
            else:
                probs = torch.exp2(scores - new_max[:, None])
                row_max = new_max
            row_sum = row_sum + torch.sum(probs, dim=1)
            acc = hl.dot(probs.to(q.dtype), v[tile_b.begin, tile_h.begin, tile_n, :], acc=acc)
            if form == "after":
                acc = acc * 0.5
        out[tile_b.begin, tile_h.begin, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
    return out


@pytest.mark.parametrize("form, message", [("one branch", "reads an accumulator"),
                                           ("after", "an accumulator is assigned after its dot")])
def test_accumulator_changes_the_schedule_cannot_order_are_refused(form, message):
    """Statements that read a value a branch assigns after the accumulator's wait, or change the
    accumulator after its dot, are refused rather than reordered (a view such as `row_max[:, None]`
    inlined where it is read counts as a read of the value)."""
    q, k, v = (torch.randn(1, 2, 200, 64, dtype=torch.float16) for _ in range(3))
    config = {"block_sizes": [128, 64], "num_stages": 2, "backend": "gluon", "consumer_groups": 2}
    with pytest.raises(exc.NotSupported, match=message):
        attention_rescaled.bind((q, k, v, form)).to_triton_code(config)


def test_row_copies_stream_key_vectors():
    """The dk/dv kernel's lse and delta columns (vectors along its query loops' block) are row
    copies: in each step of both loops the loader copies them, masked, into a ring slot and arrives
    once its copies landed (every loader thread: the ready barriers count 128); the consumers wait
    for the slot with the dots' tiles, read it in the scores' column layout and release it after a
    barrier. dq's lse and delta rows, loaded before its loops, stay pointer loads."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    source = attention_bwd.bind(args).to_triton_code(gluon_bwd_config(True))
    loaders = re.findall(r"def (\w+_loader)\(", source)
    dq_loader, dkdv_loader = (partition(source, header) for header in loaders)
    dq, dkdv = (partition(source, header) for header in re.findall(r"def (\w+_consumer)\(WG", source))
    assert "row_0" not in dq_loader + dq and "gl.load((lse + " in dq
    copies = re.findall(r"async_copy\.async_copy_global_to_shared\(row_(\d)\.index\(slot\), \((\w+) \+ .*, mask=", dkdv_loader)
    assert sorted(copies) == [("0", "lse"), ("0", "lse"), ("1", "delta"), ("1", "delta")]
    assert dkdv_loader.count("increment_count=False)") == 4 and dkdv_loader.count("mbarrier.wait(row_") == 4
    assert len(re.findall(r"= row_[01]\.index\(slot\)\.load\(gl\.SliceLayout\(0, s_layout\)\)", dkdv)) == 8
    assert "gl.load((lse" not in dkdv and "gl.load((delta" not in dkdv
    # read in the first step and the steps of each loop, released there after the warpgroup's barrier
    assert len(re.findall(r"gl\.thread_barrier\(\)\n\s+mbarrier\.arrive\(row_0_empty\.index\(slot\)\)\n"
                          r"\s+mbarrier\.arrive\(row_1_empty", dkdv)) == 4
    assert re.search(r"mbarrier\.init\(row_0_ready\.index\(i\), count=128\)", source)


def test_triton_only_hints_pass_through_or_drop():
    """Knobs a Gluon config keeps from a Triton one: eviction policies reach the consumers' pointer
    loads (dq's) and the loader's row copies (dk/dv's), and range hints (pipelining stages) on a
    scalar loop around device loops are dropped."""
    args = make_bwd_inputs(bwd_shape(1, 2, 1, 200, 300, 128, True), torch.float16, "cpu", 0)
    bound = attention_bwd.bind(args)
    policies = len(bound.config_spec.default_config()["load_eviction_policies"])
    source = bound.to_triton_code({**gluon_bwd_config(True), "load_eviction_policies": ["evict_last"] * policies,
                                   "range_num_stages": [3] * 5})
    consumers = [partition(source, header) for header in re.findall(r"def (\w+_consumer)\(WG", source)]
    dkdv_loader = partition(source, re.findall(r"def (\w+_loader)\(", source)[1])
    assert len(consumers) == 2 and "eviction_policy='evict_last'" in consumers[0]
    assert dkdv_loader.count("eviction_policy='evict_last')") == 4
    assert re.search(r"\n\s+for idx_\d+ in range\(0, group, 1\):\n", consumers[1])


def test_default_backend_is_left_out_of_configs():
    bound = attention_fwd.bind(attention_args(1, 2, 2, 128, 128, 64, False))
    assert "backend" not in bound.config_spec.normalize({"block_sizes": [64, 64]})
    normalized = bound.config_spec.normalize({"block_sizes": [128, 128], "backend": "gluon"})
    assert normalized["backend"] == "gluon" and normalized["consumer_groups"] == 2


def test_tma_operands_are_copied_when_misaligned():
    scope = {"torch": torch}
    exec(HELPERS["_tma_operand"], scope)
    tma_operand = scope["_tma_operand"]
    aligned = torch.randn(2, 3, 40, 64, dtype=torch.float16)
    assert tma_operand(aligned) is aligned
    strided = torch.randn(2, 3, 64, 40, dtype=torch.float16).transpose(2, 3)
    copied = tma_operand(strided)
    assert copied.stride(-1) == 1 and torch.equal(copied, strided)
    offset = torch.randn(2 * 64 + 1, dtype=torch.float16)[1:].view(2, 64)
    assert tma_operand(offset).data_ptr() % 16 == 0
    with pytest.raises(ValueError, match="16 bytes"):
        tma_operand(torch.randn(4, 36, dtype=torch.float16))


def test_host_descriptors_key_launches_by_their_specialization():
    from build_tools.dsl.launch_helpers import _launch_key
    scope = {"torch": torch}
    exec(HELPERS["_tma_descriptor"], scope)
    tma_descriptor = scope["_tma_descriptor"]
    t = torch.randn(2, 3, 40, 64, dtype=torch.bfloat16)
    desc = tma_descriptor(t, [1, 1, 64, 64], [2, 3, 0, 64])
    assert desc.shape == [2, 3, 1, 64] and desc.strides == list(t.stride()) and desc.block_shape == [1, 1, 64, 64]
    again = tma_descriptor(torch.randn(2, 3, 50, 64, dtype=torch.bfloat16), [1, 1, 64, 64], [2, 3, 50, 64])
    other = tma_descriptor(t, [1, 1, 128, 64], [2, 3, 40, 64])
    half = tma_descriptor(t.half(), [1, 1, 64, 64], [2, 3, 40, 64])
    key = lambda d: _launch_key(0, (1, d), (), 4, 2)
    assert key(desc) == key(again) and len({key(desc), key(other), key(half)}) == 3


def reference(q, k, v, causal, scale):
    group = q.shape[1] // k.shape[1]
    qd, kd, vd = q.double(), k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    scores = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, -1) @ vd, torch.logsumexp(scores, -1)


@pytest.mark.gpu
@pytest.mark.parametrize("causal, relative, branch", [(False, False, False), (False, True, False), (True, False, False),
                                                      (True, True, False), (True, False, True), (True, True, True)])
@pytest.mark.parametrize("head_dim, groups", [(64, 1), (64, 2), (64, 3), (128, 1), (128, 2)])
@pytest.mark.parametrize("shape", [(2, 4, 2, 1000, 1000), (1, 4, 4, 300, 777), (1, 4, 2, 777, 300),
                                   (1, 2, 2, 1, 129), (1, 2, 1, 65, 1)])
def test_lowered_attention_matches_float64(causal, relative, branch, head_dim, groups, shape, device):
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    batch, heads, kv_heads, q_len, kv_len = shape
    args = attention_args(batch, heads, kv_heads, q_len, kv_len, head_dim, causal, device="cuda",
                          dtype=torch.bfloat16)
    launcher = attention_fwd.bind(args).compile_config({**gluon_config(causal, groups, branch=branch),
                                                        "relative_masks": relative})
    with poisoned_allocations():  # an element the kernel does not write stays NaN and fails below
        out, lse = launcher(*args)
    want, want_lse = reference(*args)
    assert (out.double() - want).abs().max() < 2e-2
    assert (lse.double() - want_lse).abs().max() < 1e-4



@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim, groups", [(64, 1), (128, 2)])
@pytest.mark.parametrize("climbing", [False, True])
def test_lazy_rescale_lowered_matches_float64(causal, head_dim, groups, climbing, device):
    """`lazy_rescale` in Gluon, on random scores (only a row's first tiles move its maximum past the
    slack) and on scores that climb by more than the slack per key tile over the first half of the
    keys (those tiles must rescale, or the bf16 probabilities overflow)."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    q, k, v, causal, scale = attention_args(2, 4, 2, 1000, 1000, head_dim, causal, device="cuda", dtype=torch.bfloat16)
    if climbing:
        direction = torch.ones(head_dim, device="cuda", dtype=torch.float64) / math.sqrt(head_dim)
        keys = torch.arange(1000, device="cuda")
        climb = torch.where(keys < 500, keys * 0.5, 0.0).double()
        q = (q.double() * 0.1 + direction * math.sqrt(head_dim)).to(torch.bfloat16)
        k = (k.double() * 0.1 + climb[:, None] * direction * math.sqrt(head_dim)).to(torch.bfloat16)
    args = (q, k, v, causal, scale)
    launcher = attention_fwd.bind(args).compile_config({**gluon_config(causal, groups), "lazy_rescale": True,
                                                        "block_sizes": [64 * groups, 64 if head_dim == 64 else 128]})
    with poisoned_allocations():
        out, lse = launcher(*args)
    want, want_lse = reference(*args)
    assert (out.double() - want).abs().max() < 2e-2
    assert ((lse.double() - want_lse).abs() / want_lse.abs().clamp(min=1)).max() < 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("causal, branch, lazy", [(False, False, False), (True, False, False), (True, True, False),
                                                  (False, False, True)])
@pytest.mark.parametrize("head_dim, groups, cap", [(64, 1, 80), (64, 2, None), (128, 2, None)])
@pytest.mark.parametrize("shape", [(2, 4, 2, 1000, 1000), (1, 4, 4, 300, 777), (1, 2, 1, 65, 1)])
def test_row_sum_dot_lowered_matches_float64(causal, branch, lazy, head_dim, groups, cap, shape, device):
    """`row_sum_dot` in Gluon: the row sums from the product with the shared ones tile, in every
    loop form (the diagonal loop, the branch, the lazy rescale) and over ragged key tails. The sums
    are of the bf16-rounded probabilities (those the output's numerator multiplied), each off by at
    most 2**-9 of itself, so the log-sum-exp may be off by as much (a row of a few keys)."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = attention_args(*shape, head_dim, causal, device="cuda", dtype=torch.bfloat16)
    config = {**gluon_config(causal, groups, branch=branch), "row_sum_dot": True, "lazy_rescale": lazy,
              "block_sizes": [64 * groups, 64 if head_dim == 64 else 128]} | ({"maxnreg": cap} if cap else {})
    launcher = attention_fwd.bind(args).compile_config(config)
    with poisoned_allocations():
        out, lse = launcher(*args)
    want, want_lse = reference(*args)
    assert (out.double() - want).abs().max() < 2e-2
    assert (lse.double() - want_lse).abs().max() < 2 ** -8


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("groups, cap", [(1, 80), (1, 128), (2, 80)])
@pytest.mark.parametrize("shape", [(2, 4, 2, 1000, 1000), (1, 2, 1, 65, 1), (1, 4, 4, 300, 777)])
def test_register_capped_attention_matches_float64(causal, groups, cap, shape, device):
    """The D64 forward with 64-key tiles under `maxnreg`, several CTAs per SM."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = attention_args(*shape, 64, causal, device="cuda", dtype=torch.bfloat16)
    config = {**gluon_config(causal, groups), "block_sizes": [64 * groups, 64], "maxnreg": cap}
    launcher = attention_fwd.bind(args).compile_config(config)
    with poisoned_allocations():
        out, lse = launcher(*args)
    want, want_lse = reference(*args)
    assert (out.double() - want).abs().max() < 2e-2
    assert (lse.double() - want_lse).abs().max() < 1e-4


# persistent grids: tiles in launch order, and longest first over sections of heads (reversed)
PERSISTENT = {"interleaved": {"pid_type": "persistent_interleaved"},
              "blocked, sections reversed": {"pid_type": "persistent_blocked", "loop_orders": [[1, 0, 2]],
                                             "l2_groupings": [2], "tile_reversals": [True]},
              "drawn, sections reversed": {"pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2]],
                                           "l2_groupings": [2], "tile_reversals": [True]}}


@pytest.mark.gpu
@pytest.mark.parametrize("causal, branch", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("grid", sorted(PERSISTENT))
@pytest.mark.parametrize("shape", [(4, 16, 4, 1100, 700), (1, 3, 1, 777, 300), (3, 2, 2, 65, 1)])
@pytest.mark.parametrize("head_dim, groups", [(64, 1), (64, 2), (64, 3), (128, 1), (128, 2)])
def test_persistent_lowered_attention_matches_float64(causal, branch, groups, grid, shape, head_dim, device):
    """Where a program walks several tiles (the first shape: more than 2 per SM), the residents, ring,
    turns and stores carry over from tile to tile; at D64 as the H200's B16 S512 entry runs (two
    consumer warpgroups over 128-key tiles, drawn tiles), with three warpgroups taking turns (192
    rows), and at D128."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    batch, heads, _, q_len, _ = shape
    if shape[0] == 4:
        assert batch * heads * math.ceil(q_len / (64 * groups)) > 2 * torch.cuda.get_device_properties(0).multi_processor_count
    args = attention_args(*shape, head_dim, causal, device="cuda", dtype=torch.bfloat16)
    bound = attention_fwd.bind(args)
    config = {**gluon_config(causal, groups, branch=branch), **PERSISTENT[grid]}
    launcher = bound.compile_config(config)
    assert bound.config_spec.normalize(config)["pid_type"] != "flat"
    for _ in range(2):  # drawn tiles: the second launch takes the counter the first left at zero
        with poisoned_allocations():
            out, lse = launcher(*args)
        want, want_lse = reference(*args)
        assert (out.double() - want).abs().max() < 2e-2
        assert (lse.double() - want_lse).abs().max() < 1e-4
    if PERSISTENT[grid]["pid_type"] == "persistent_dynamic":  # the draws left their counter at zero
        (tickets,) = launcher.__globals__["_COUNTERS"].values()
        assert int(tickets.abs().sum()) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("grid", sorted(PERSISTENT))
@pytest.mark.parametrize("shape", [(4, 16, 4, 1100, 700), (3, 2, 2, 65, 1)])
@pytest.mark.parametrize("head_dim, groups", [(64, 1), (128, 2)])
def test_persistent_resident_stores_attention_matches_float64(causal, grid, shape, head_dim, groups, device):
    """The output staged in the query's resident slot (`resident_stores`): the loader fills the
    slot with the tile after next only once the store has read it."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = attention_args(*shape, head_dim, causal, device="cuda", dtype=torch.bfloat16)
    config = {**gluon_config(causal, groups), **PERSISTENT[grid], "resident_stores": True}
    launcher = attention_fwd.bind(args).compile_config(config)
    for _ in range(2):
        with poisoned_allocations():
            out, lse = launcher(*args)
        want, want_lse = reference(*args)
        assert (out.double() - want).abs().max() < 2e-2
        assert (lse.double() - want_lse).abs().max() < 1e-4


BWD_CASES = [(32, False, "gluon", False, False), (64, False, "gluon", False, False), (32, True, "gluon", False, False),
             (32, True, ["gluon", "triton"], False, False), (64, False, "gluon", True, False),
             (32, True, "gluon", [False, True], False), (32, True, "gluon", False, True),
             (64, False, "gluon", True, [False, True])]
# causal only: the masks under branches (dq, dk/dv), beside the cases above
BWD_BRANCH_CASES = [(32, False, "gluon", False, False, (True, True)), (64, False, "gluon", True, [False, True], (True, True)),
                    (32, True, "gluon", False, True, (True, False)), (32, True, ["gluon", "triton"], False, False, (False, True))]


def assert_backward_matches_float64(launcher, args) -> None:
    """Runs a bf16 backward with poisoned allocations (an unwritten element stays NaN) and checks
    each gradient against the float64 reference."""
    with poisoned_allocations():
        grads = launcher(*args)
    rtol, atol = tolerance_bwd(torch.bfloat16)
    for name, got, want in zip(("dq", "dk", "dv"), grads, reference_bwd(*args)):
        error = (got.double() - want).abs()
        assert torch.allclose(got.double(), want, rtol=rtol, atol=atol), (name, error.max(), error.argmax())


@pytest.mark.gpu
@pytest.mark.parametrize("causal, query_block, peel, backend, shared, relative, branch",
                         [(causal, *case, (False, False)) for causal in (False, True) for case in BWD_CASES] +
                         [(True, *case) for case in BWD_BRANCH_CASES])
@pytest.mark.parametrize("dims", [(2, 4, 2, 1000, 1000, 128), (1, 4, 4, 300, 777, 128), (1, 4, 1, 777, 300, 64),
                                  (1, 2, 2, 1, 129, 128), (1, 2, 1, 65, 1, 128)])
def test_lowered_attention_backward_matches_float64(causal, query_block, peel, backend, shared, relative, branch, dims,
                                                    device):
    """Both kernels lowered, or dq alone beside the Triton dk/dv kernel (a backend per kernel); the
    accumulating dots' register operands in registers or in shared memory (per kernel); masks
    relative or not (per kernel); causal masks under branches in one loop per kernel or not."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = make_bwd_inputs(bwd_shape(*dims, causal), torch.bfloat16, "cuda", 7)
    launcher = attention_bwd.bind(args).compile_config({**gluon_bwd_config(causal, query_block, peel=peel, branch=branch),
                                                        "backend": backend, "shared_operands": shared,
                                                        "relative_masks": relative})
    assert_backward_matches_float64(launcher, args)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("backend", ["gluon", ["gluon", "triton"]])
@pytest.mark.parametrize("dims", [(2, 4, 2, 1000, 1000, 64), (1, 4, 1, 777, 300, 64), (1, 2, 1, 65, 1, 64)])
def test_three_group_attention_backward_matches_float64(causal, backend, dims, device):
    """Three consumer warpgroups (192 rows of dq, 192 keys of dk/dv) at D64, as the H200's
    non-causal entries run: both kernels lowered, or dq beside the Triton dk/dv kernel."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = make_bwd_inputs(bwd_shape(*dims, causal), torch.bfloat16, "cuda", 11)
    config = {**gluon_bwd_config(causal, peel=True, groups=3), "backend": backend}
    if backend != "gluon":
        config["block_sizes"] = [192, 64, 64, 64]
    launcher = attention_bwd.bind(args).compile_config(config)
    assert_backward_matches_float64(launcher, args)


# (grid, resident_stores) of the persistent backward: longest tiles first (dq's last query tiles,
# dk/dv's first key tiles) over sections of two heads
PERSISTENT_BWD = {"interleaved": {"pid_type": "persistent_interleaved"},
                  "drawn, longest first": {"pid_type": "persistent_dynamic", "loop_orders": [[1, 0, 2], [1, 0, 2]],
                                           "l2_groupings": [2, 2], "tile_reversals": [True, False]}}


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("grid, resident, peeled", [("interleaved", True, False), ("drawn, longest first", False, False),
                                                    ("drawn, longest first", True, False),
                                                    ("drawn, longest first", True, True)])
@pytest.mark.parametrize("dims", [(4, 16, 8, 1100, 1500, 128), (1, 4, 1, 777, 300, 64), (1, 2, 1, 65, 1, 128)])
def test_persistent_lowered_attention_backward_matches_float64(causal, grid, resident, peeled, dims, device):
    """Both backward kernels on persistent grids, their stores staged in buffers of their own or
    in the tiles' resident slots (`resident_stores`), and in the H200 table's form with dk/dv's
    query loop peeled (its ragged tail in a loop of its own at these lengths). At the first shape
    both kernels' programs walk more than two tiles each (576 dq tiles, 384 dk/dv tiles). At D128
    the dq kernel's own store buffer leaves room for two ring stages only (three with its store in
    Q's slot, beside dk/dv's four)."""
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma and TMA need a Hopper GPU")
    args = make_bwd_inputs(bwd_shape(*dims, causal), torch.bfloat16, "cuda", 5)
    config = {**gluon_bwd_config(causal, stages=4 if resident else 2), **PERSISTENT_BWD[grid], "resident_stores": resident}
    if resident:  # dq's rings three stages deep (its first device loop's range_num_stages), dk/dv's four
        config["range_num_stages"] = [3] + [0] * (len(config["range_peel_tails"]) - 1)
    if peeled:
        config["range_peel_tails"] = shipped_peel(causal)
    launcher = attention_bwd.bind(args).compile_config(config)
    for _ in range(2):  # drawn tiles: the second launch takes the counters the first left at zero
        assert_backward_matches_float64(launcher, args)


if __name__ == "__main__":
    print(json.dumps(cross_compile_cases()))
