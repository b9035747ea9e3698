"""Feasibility probe for a Gluon back end: an attention forward written with Triton 3.6's Gluon
(explicit warp groups) against cuDNN and the library's forward, in one process.

    python3 scratch/gluon_attention_probe.py cross            # compile for sm_90 here (no GPU)
    python3 scratch/gluon_attention_probe.py run --out $OUT   # on the GPU: check and time

The schedule is the one the DSL's Triton back end cannot express (benchmarks/MISSED.md, attention):
a one-warp loader partition streams K and V tiles through a shared-memory ring by TMA, signalling
mbarriers; the default partition (BLOCK_M / 16 warps) keeps two wgmma groups in flight, issuing the
next tile's scores Q·Kᵀ and the previous tile's P·V together and running the softmax of the scores
while P·V is still on the tensor cores (FlashAttention-3's intra-warpgroup overlap). Hand-written
here only to measure what such a back end would reach; nothing of it ships.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

LOG2E = 1.4426950408889634


@gluon.jit
def _item(item, n_m, seq_len, kv_len, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """Work item -> (query head, first row, unmasked key tiles, key tiles); the longest causal rows first."""
    q_head = item // n_m
    row0 = (n_m - 1 - item % n_m) * BLOCK_M
    if CAUSAL:
        n_unmasked = gl.minimum(row0, kv_len) // BLOCK_N
        n_tiles = gl.cdiv(gl.minimum(row0 + BLOCK_M, kv_len), BLOCK_N)
    else:
        n_unmasked = kv_len // BLOCK_N
        n_tiles = gl.cdiv(kv_len, BLOCK_N)
    return q_head, row0, n_unmasked, n_tiles


@gluon.jit
def _loader(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty,
            first, n_items, step, n_m, group, q_len, kv_len, CAUSAL: gl.constexpr, ROWS: gl.constexpr,
            BLOCK_N: gl.constexpr, STAGES: gl.constexpr, NUM_WG: gl.constexpr):
    """Per work item: its query tile once the consumers are done with the previous one, then key tile
    j's K and V into ring slot c % STAGES (c counting over all items) once the consumers released it."""
    c = 0
    count = 0
    for item in range(first, n_items, step):
        q_head, row0, n_unmasked, n_tiles = _item(item, n_m, q_len, kv_len, ROWS * NUM_WG, BLOCK_N, CAUSAL)
        kv_head = q_head // group
        mbarrier.wait(q_empty, (count & 1) ^ 1)
        mbarrier.expect(q_ready, NUM_WG * q_desc.block_type.nbytes)
        for i in gl.static_range(NUM_WG):
            tma.async_copy_global_to_shared(q_desc, [q_head, row0 + i * ROWS, 0], q_ready, q_smem.index(i))
        for j in range(n_tiles):
            slot = c % STAGES
            phase = (c // STAGES) & 1
            mbarrier.wait(k_empty.index(slot), phase ^ 1)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(k_desc, [kv_head, j * BLOCK_N, 0], k_ready.index(slot),
                                            k_smem.index(slot))
            mbarrier.wait(v_empty.index(slot), phase ^ 1)
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(v_desc, [kv_head, j * BLOCK_N, 0], v_ready.index(slot),
                                            v_smem.index(slot))
            c += 1
        count += 1


@gluon.jit
def _softmax_step(s, m_i, l_i, j, row0, kv_len, qk_scale, MASKED: gl.constexpr, CAUSAL: gl.constexpr,
                  ROWS: gl.constexpr, BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    if MASKED:
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, s_layout))
        keep = cols[None, :] < kv_len
        if CAUSAL:
            rows = row0 + gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
            keep = keep & (cols[None, :] <= rows[:, None])
        s = gl.where(keep, s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_i = l_i * alpha + gl.sum(p, axis=1)
    return p, m_new, l_i, alpha


@gluon.jit
def _wait_turn(turn, wg: gl.constexpr, t, NUM_WG: gl.constexpr):
    """Ping-pong: warpgroup `wg` issues its dots only after warpgroup wg - 1 issued its own."""
    if NUM_WG > 1:
        mbarrier.wait(turn.index(wg), (t & 1) ^ (1 if wg == 0 else 0))


@gluon.jit
def _pass_turn(turn, wg: gl.constexpr, NUM_WG: gl.constexpr):
    if NUM_WG > 1:
        mbarrier.arrive(turn.index((wg + 1) % NUM_WG))


@gluon.jit
def _step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, p, m_i, l_i, acc, s_zero, c, j, t,
          my_row0, kv_len, qk_scale, wg: gl.constexpr, MASKED: gl.constexpr, CAUSAL: gl.constexpr,
          ROWS: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr,
          NUM_WG: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """Key tile j (ring counter c, turn t): its scores and the P·V of tile j - 1 in flight together;
    the softmax of tile j runs while P·V is still on the tensor cores."""
    slot = c % STAGES
    prev = (c - 1) % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    mbarrier.wait(v_ready.index(prev), ((c - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(q_smem.dtype), p_layout)
    _wait_turn(turn, wg, t, NUM_WG)
    k_tile = k_smem.index(slot).reshape([BLOCK_N, HEAD_D])
    s_tok = warpgroup_mma(q_smem, k_tile.permute((1, 0)), s_zero, use_acc=False, is_async=True)
    acc_tok = warpgroup_mma(p_op, v_smem.index(prev).reshape([BLOCK_N, HEAD_D]), acc, is_async=True)
    _pass_turn(turn, wg, NUM_WG)
    s = warpgroup_mma_wait(1, deps=(s_tok, ))
    mbarrier.arrive(k_empty.index(slot))
    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, j, my_row0, kv_len, qk_scale, MASKED, CAUSAL, ROWS, BLOCK_N,
                                       s_layout)
    acc = warpgroup_mma_wait(0, deps=(acc_tok, ))
    mbarrier.arrive(v_empty.index(prev))
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return p, m_i, l_i, acc


@gluon.jit
def _consumer(wg: gl.constexpr, q_smem_all, o_smem_all, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty,
              v_empty, turn, lse_ptr, o_desc, first, n_items, step, n_m, q_len, kv_len, qk_scale,
              CAUSAL: gl.constexpr, ROWS: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
              STAGES: gl.constexpr, NUM_WG: gl.constexpr, WG_WARPS: gl.constexpr):
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WG_WARPS, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WG_WARPS, 1],
                                                       instr_shape=[16, HEAD_D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    dtype: gl.constexpr = o_desc.dtype
    q_smem = q_smem_all.index(wg).reshape([ROWS, HEAD_D])
    o_smem = o_smem_all.index(wg)
    s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    c = 0
    t = 0
    count = 0
    for item in range(first, n_items, step):
        q_head, row0, n_unmasked, n_tiles = _item(item, n_m, q_len, kv_len, ROWS * NUM_WG, BLOCK_N, CAUSAL)
        my_row0 = row0 + wg * ROWS
        m_i = gl.full([ROWS], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
        l_i = gl.full([ROWS], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
        acc = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)

        mbarrier.wait(q_ready, count & 1)
        mbarrier.wait(k_ready.index(c % STAGES), (c // STAGES) & 1)
        _wait_turn(turn, wg, t, NUM_WG)
        k_tile = k_smem.index(c % STAGES).reshape([BLOCK_N, HEAD_D])
        s_tok = warpgroup_mma(q_smem, k_tile.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        _pass_turn(turn, wg, NUM_WG)
        s = warpgroup_mma_wait(0, deps=(s_tok, ))
        mbarrier.arrive(k_empty.index(c % STAGES))
        if n_unmasked > 0:
            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, 0, my_row0, kv_len, qk_scale, False, CAUSAL, ROWS,
                                               BLOCK_N, s_layout)
        else:
            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, 0, my_row0, kv_len, qk_scale, True, CAUSAL, ROWS,
                                               BLOCK_N, s_layout)
        for j in range(1, n_unmasked):
            p, m_i, l_i, acc = _step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, p, m_i, l_i,
                                     acc, s_zero, c + j, j, t + j, my_row0, kv_len, qk_scale, wg, False, CAUSAL,
                                     ROWS, BLOCK_N, HEAD_D, STAGES, NUM_WG, s_layout, o_layout, p_layout)
        for j in range(gl.maximum(n_unmasked, 1), n_tiles):
            p, m_i, l_i, acc = _step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, p, m_i, l_i,
                                     acc, s_zero, c + j, j, t + j, my_row0, kv_len, qk_scale, wg, True, CAUSAL,
                                     ROWS, BLOCK_N, HEAD_D, STAGES, NUM_WG, s_layout, o_layout, p_layout)
        mbarrier.arrive(q_empty)  # every scores dot of this item has completed
        last = c + n_tiles - 1
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        p_op = gl.convert_layout(p.to(dtype), p_layout)
        _wait_turn(turn, wg, t + n_tiles, NUM_WG)
        acc = warpgroup_mma(p_op, v_smem.index(last % STAGES).reshape([BLOCK_N, HEAD_D]), acc, is_async=True)
        _pass_turn(turn, wg, NUM_WG)
        acc = warpgroup_mma_wait(0, deps=(acc, ))
        mbarrier.arrive(v_empty.index(last % STAGES))
        c += n_tiles
        t += n_tiles + 1
        count += 1

        l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
        out = (acc / l_o[:, None]).to(dtype)
        rows = my_row0 + gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
        gl.store(lse_ptr + q_head.to(gl.int64) * q_len + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453,
                 mask=rows < q_len)
        tma.store_wait(0)  # the previous item's output has left o_smem
        o_smem.reshape([ROWS, HEAD_D]).store(out)
        fence_async_shared()
        tma.async_copy_shared_to_global(o_desc, [q_head, my_row0, 0], o_smem)
    tma.store_wait(0)


@gluon.jit
def attention_fwd_ws(q_desc, k_desc, v_desc, o_desc, lse_ptr, q_len, kv_len, group, n_heads, qk_scale,
                     CAUSAL: gl.constexpr, ROWS: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
                     STAGES: gl.constexpr, NUM_WG: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                     LOADER_WARPS: gl.constexpr, num_warps: gl.constexpr):
    """Work items are (query tile of NUM_WG * ROWS rows, batch x query head); program p takes items p,
    p + grid, ... (one item each when the grid covers them all, or a persistent grid). q, k, v, out
    are viewed as [batch x heads, S, D] so TMA zero-fills past each head's end."""
    BLOCK_M: gl.constexpr = ROWS * NUM_WG
    n_m = gl.cdiv(q_len, BLOCK_M)
    n_items = n_m * n_heads
    first = gl.program_id(0)
    step = gl.num_programs(0)

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [NUM_WG, 1, ROWS, HEAD_D], q_desc.layout)
    o_smem = gl.allocate_shared_memory(o_desc.dtype, [NUM_WG, 1, ROWS, HEAD_D], o_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, 1, BLOCK_N, HEAD_D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, 1, BLOCK_N, HEAD_D], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    mbarrier.init(q_empty, count=NUM_WG)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=NUM_WG)
        mbarrier.init(v_empty.index(i), count=NUM_WG)
    for i in gl.static_range(NUM_WG):
        mbarrier.init(turn.index(i), count=1)

    # constexprs stay constexprs only when passed directly (not through a tuple built here)
    if NUM_WG == 1:
        gl.warp_specialize([
            (_consumer, (0, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty,
                         turn, lse_ptr, o_desc, first, n_items, step, n_m, q_len, kv_len, qk_scale, CAUSAL, ROWS,
                         BLOCK_N, HEAD_D, STAGES, NUM_WG, num_warps)),
            (_loader, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty,
                       v_empty, first, n_items, step, n_m, group, q_len, kv_len, CAUSAL, ROWS, BLOCK_N, STAGES,
                       NUM_WG)),
        ], [LOADER_WARPS], [24])
    else:
        gl.warp_specialize([
            (_consumer, (0, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty,
                         turn, lse_ptr, o_desc, first, n_items, step, n_m, q_len, kv_len, qk_scale, CAUSAL, ROWS,
                         BLOCK_N, HEAD_D, STAGES, NUM_WG, num_warps)),
            (_consumer, (1, q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty,
                         turn, lse_ptr, o_desc, first, n_items, step, n_m, q_len, kv_len, qk_scale, CAUSAL, ROWS,
                         BLOCK_N, HEAD_D, STAGES, NUM_WG, num_warps)),
            (_loader, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty,
                       v_empty, first, n_items, step, n_m, group, q_len, kv_len, CAUSAL, ROWS, BLOCK_N, STAGES,
                       NUM_WG)),
        ], [num_warps, LOADER_WARPS], [CONSUMER_REGS, 24])


def launch_args(q, k, v, causal, rows=64, block_n=128, stages=2, num_wg=2, persistent=False, regs=None,
                loader_warps=4):
    """(grid, args, kwargs, out, lse) for q of [B, Hq, Sq, D] and k, v of [B, Hkv, Sk, D]: `num_wg`
    consumer warpgroups of `rows` query rows each (rows / 16 warps), ping-ponging when more than one;
    `persistent`: one program per SM walking the work items."""
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    block_m = rows * num_wg
    if regs is None:  # what the consumers may take of the 64K registers beside a 24-register loader
        regs = min(240, (65536 // 32 - 24 * loader_warps) // (num_wg * rows // 16) // 8 * 8)
    dt = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    out = torch.empty_like(q)
    lse = torch.empty(B, Hq, Sq, dtype=torch.float32, device=q.device)
    q_layout = gl.NVMMASharedLayout.get_default_for([1, rows, D], dt)
    kv_layout = gl.NVMMASharedLayout.get_default_for([1, block_n, D], dt)
    q_desc = TensorDescriptor.from_tensor(q.reshape(B * Hq, Sq, D), [1, rows, D], q_layout)
    k_desc = TensorDescriptor.from_tensor(k.reshape(B * Hkv, Sk, D), [1, block_n, D], kv_layout)
    v_desc = TensorDescriptor.from_tensor(v.reshape(B * Hkv, Sk, D), [1, block_n, D], kv_layout)
    o_desc = TensorDescriptor.from_tensor(out.reshape(B * Hq, Sq, D), [1, rows, D], q_layout)
    scale = 1.0 / math.sqrt(D)
    items = triton.cdiv(Sq, block_m) * B * Hq
    if persistent:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 132
        grid = (min(items, sms), )
    else:
        grid = (items, )
    args = (q_desc, k_desc, v_desc, o_desc, lse, Sq, Sk, Hq // Hkv, B * Hq, scale * LOG2E)
    kwargs = dict(CAUSAL=causal, ROWS=rows, BLOCK_N=block_n, HEAD_D=D, STAGES=stages, NUM_WG=num_wg,
                  CONSUMER_REGS=regs, LOADER_WARPS=loader_warps, num_warps=rows // 16)
    return grid, args, kwargs, out, lse


def cross(cases) -> None:
    """Compile each case for sm_90 on this (GPU-less) machine and print ptxas's resource use."""
    from build_tools.cross_compile import compile_launch
    fn = attention_fwd_ws
    for D, causal, rows, bn, stages, num_wg, persistent in cases:
        q = torch.empty(1, 2, 256, D, dtype=torch.bfloat16)
        _, args, kwargs, _, _ = launch_args(q, q, q, causal, rows, bn, stages, num_wg, persistent)
        compiled = compile_launch(fn, args, kwargs)
        print(f"D{D} causal={causal} {num_wg}x{rows} rows, {bn} keys, stages={stages}, persistent={persistent}: "
              f"{compiled.ptxas_info()} setmaxnreg={compiled.features()['setmaxnreg']}",
              flush=True)


# (head dim, causal, rows per consumer warpgroup, key tile, stages, consumer warpgroups, persistent grid)
# (Triton 3.6's TMA blocks are powers of two: FlashAttention-3's 176- and 192-key tiles are not expressible.)
CASES = [(D, causal, 64, 128, 2, 2, persistent) for D in (128, 64) for causal in (False, True)
         for persistent in (False, True)]
# (B, Hq, Hkv, Sq, Sk): checked, not timed: tails of every tile, grouped heads, Sq != Sk, one query or key
CHECK_SHAPES = [(2, 8, 2, 1000, 1000), (1, 4, 4, 300, 777), (1, 4, 2, 777, 300), (1, 2, 2, 1, 129), (1, 2, 1, 65, 1)]


def reference(q, k, v, causal):
    """(out, lse) in float64 with top-left causal alignment and grouped heads."""
    group = q.shape[1] // k.shape[1]
    qd, kd, vd = q.double(), k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    scores = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        scores = scores.masked_fill(torch.ones(sq, sk, device=q.device, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1) @ vd, torch.logsumexp(scores, -1)


def check(case, D, causal, launch) -> None:
    """Max errors against float64 at CHECK_SHAPES, outputs poisoned with NaN first."""
    worst_out = worst_lse = 0.0
    unwritten = 0
    for B, Hq, Hkv, Sq, Sk in CHECK_SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(Sq * 7 + Sk)
        q = torch.randn(B, Hq, Sq, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        k, v = (torch.randn(B, Hkv, Sk, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
        grid, args, kwargs, out, lse = launch(q, k, v)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        attention_fwd_ws[grid](*args, **kwargs)
        ref, ref_lse = reference(q, k, v, causal)
        unwritten += int(out.isnan().sum() + lse.isnan().sum())
        worst_out = max(worst_out, float((out.double() - ref).abs().max()))
        worst_lse = max(worst_lse, float((lse.double() - ref_lse).abs().max()))
    case.update(check_err_out=worst_out, check_err_lse=worst_lse, check_unwritten=unwritten)


def timed(timer, fns: dict, flops: float) -> dict:
    """Median µs and TFLOP/s of each of `fns` ("gluon", "ours", "cudnn"), timed in alternating
    rounds, and Gluon's speedups over the other two."""
    case = {}
    for name, runs in timer.device_rounds(fns, rounds=5).items():
        us = statistics.median(runs)
        case[f"{name}_us"] = us
        case[f"{name}_tflops"] = flops / us / 1e6
    case["gluon_vs_cudnn"] = case["cudnn_us"] / case["gluon_us"]
    case["gluon_vs_ours"] = case["ours_us"] / case["gluon_us"]
    return case


def run(out_dir: str, seqs, quick: bool) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import helion_kernels
    from benchmarks.timing import Timer
    timer = Timer(torch.device("cuda"))
    results = []
    B, H = 4, 32
    for D, causal, rows, bn, stages, num_wg, persistent in CASES:
        def launch(q, k, v):
            return launch_args(q, k, v, causal, rows, bn, stages, num_wg, persistent)
        base = dict(D=D, causal=causal, rows=rows, num_wg=num_wg, block_n=bn, stages=stages, persistent=persistent)
        case = dict(base, S="check")
        try:
            check(case, D, causal, launch)
        except Exception as error:  # noqa: BLE001 - reported per case
            case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
        results.append(case)
        print(json.dumps(case), flush=True)
        for S in ([] if quick or "error" in case else seqs):
            torch.manual_seed(S + D)
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            grid, args, kwargs, out, lse = launch(q, k, v)
            case = dict(base, S=S)
            try:
                attention_fwd_ws[grid](*args, **kwargs)

                def cudnn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

                case["max_diff_cudnn"] = float((out.float() - cudnn().float()).abs().max())
                case.update(timed(timer, {
                    "gluon": lambda: attention_fwd_ws[grid](*args, **kwargs),
                    "ours": lambda: helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal),
                    "cudnn": cudnn}, 4 * B * H * S * S * D * (0.5 if causal else 1.0)))
            except Exception as error:  # noqa: BLE001 - reported per case
                case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
            results.append(case)
            print(json.dumps(case), flush=True)
        with open(os.path.join(out_dir, "gluon_attention_probe.json"), "w") as fh:
            json.dump(results, fh, indent=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("cross", "run"))
    parser.add_argument("--out", default=".")
    parser.add_argument("--seqs", default="1024,2048,4096,8192")
    parser.add_argument("--quick", action="store_true", help="only the checks")
    opts = parser.parse_args(argv)
    if opts.mode == "cross":
        cross(CASES)
    else:
        run(opts.out, [int(s) for s in opts.seqs.split(",")], opts.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
