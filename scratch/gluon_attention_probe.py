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
import re
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
SETMAXNREG = re.compile(r"setmaxnreg[.a-z0-9]*\s+[0-9]+")


@gluon.jit
def _loader(k_desc, v_desc, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, kv_row0, n_tiles,
            BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    for j in range(n_tiles):
        slot = j % STAGES
        phase = (j // STAGES) & 1
        mbarrier.wait(k_empty.index(slot), phase ^ 1)
        mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [kv_row0 + j * BLOCK_N, 0], k_ready.index(slot), k_smem.index(slot))
        mbarrier.wait(v_empty.index(slot), phase ^ 1)
        mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [kv_row0 + j * BLOCK_N, 0], v_ready.index(slot), v_smem.index(slot))


@gluon.jit
def _softmax_step(s, m_i, l_i, j, row0, qk_scale, MASKED: gl.constexpr, ROWS: gl.constexpr,
                  BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    if MASKED:
        rows = row0 + gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, s_layout))
        s = gl.where(cols[None, :] <= rows[:, None], s, -float("inf"))
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
def _consumer_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, p, m_i, l_i, acc, s_zero,
                   j, t, my_row0, qk_scale, wg: gl.constexpr, MASKED: gl.constexpr, ROWS: gl.constexpr,
                   BLOCK_N: gl.constexpr, STAGES: gl.constexpr, NUM_WG: gl.constexpr,
                   s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """Scores of key tile j and P·V of tile j - 1 in flight together; the softmax of tile j runs
    while P·V is still on the tensor cores."""
    slot = j % STAGES
    prev = (j - 1) % STAGES
    mbarrier.wait(k_ready.index(slot), (j // STAGES) & 1)
    mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(q_smem.dtype), p_layout)
    _wait_turn(turn, wg, t, NUM_WG)
    s_tok = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
    acc_tok = warpgroup_mma(p_op, v_smem.index(prev), acc, is_async=True)
    _pass_turn(turn, wg, NUM_WG)
    s = warpgroup_mma_wait(1, deps=(s_tok, ))
    mbarrier.arrive(k_empty.index(slot))
    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, j, my_row0, qk_scale, MASKED, ROWS, BLOCK_N, s_layout)
    acc = warpgroup_mma_wait(0, deps=(acc_tok, ))
    mbarrier.arrive(v_empty.index(prev))
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return p, m_i, l_i, acc


@gluon.jit
def _plain_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, m_i, l_i, acc, s_zero, j, t,
                my_row0, qk_scale, wg: gl.constexpr, MASKED: gl.constexpr, ROWS: gl.constexpr,
                BLOCK_N: gl.constexpr, STAGES: gl.constexpr, NUM_WG: gl.constexpr,
                s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """The loop body as the DSL source writes it: scores, softmax, P·V, each dot waited on at once;
    the warpgroups take turns at every dot."""
    slot = j % STAGES
    mbarrier.wait(k_ready.index(slot), (j // STAGES) & 1)
    _wait_turn(turn, wg, t, NUM_WG)
    s = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), s_zero, use_acc=False)
    _pass_turn(turn, wg, NUM_WG)
    mbarrier.arrive(k_empty.index(slot))
    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, j, my_row0, qk_scale, MASKED, ROWS, BLOCK_N, s_layout)
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    p_op = gl.convert_layout(p.to(q_smem.dtype), p_layout)
    mbarrier.wait(v_ready.index(slot), (j // STAGES) & 1)
    _wait_turn(turn, wg, t + 1, NUM_WG)
    acc = warpgroup_mma(p_op, v_smem.index(slot), acc)
    _pass_turn(turn, wg, NUM_WG)
    mbarrier.arrive(v_empty.index(slot))
    return m_i, l_i, acc


@gluon.jit
def _consumer(wg: gl.constexpr, q_smem_all, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn,
              lse_ptr, o_desc, q_row, lse_row, row0, n_tiles, qk_scale, CAUSAL: gl.constexpr,
              ROWS: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr,
              NUM_WG: gl.constexpr, WG_WARPS: gl.constexpr, OVERLAP: gl.constexpr):
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WG_WARPS, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WG_WARPS, 1],
                                                       instr_shape=[16, HEAD_D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    dtype: gl.constexpr = o_desc.dtype
    q_smem = q_smem_all.slice(wg * ROWS, ROWS)
    my_row0 = row0 + wg * ROWS

    m_i = gl.full([ROWS], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([ROWS], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    acc = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)
    s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)

    mbarrier.wait(q_bar, 0)
    if not OVERLAP:
        n_plain = n_tiles - 1 if CAUSAL else n_tiles
        for j in range(0, n_plain):
            m_i, l_i, acc = _plain_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, m_i, l_i,
                                        acc, s_zero, j, 2 * j, my_row0, qk_scale, wg, False, ROWS, BLOCK_N, STAGES,
                                        NUM_WG, s_layout, o_layout, p_layout)
        if CAUSAL:
            m_i, l_i, acc = _plain_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, m_i, l_i,
                                        acc, s_zero, n_tiles - 1, 2 * (n_tiles - 1), my_row0, qk_scale, wg, True,
                                        ROWS, BLOCK_N, STAGES, NUM_WG, s_layout, o_layout, p_layout)
    else:
        mbarrier.wait(k_ready.index(0), 0)
        _wait_turn(turn, wg, 0, NUM_WG)
        s_tok = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        _pass_turn(turn, wg, NUM_WG)
        s = warpgroup_mma_wait(0, deps=(s_tok, ))
        mbarrier.arrive(k_empty.index(0))
        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, 0, my_row0, qk_scale, CAUSAL and n_tiles == 1, ROWS,
                                           BLOCK_N, s_layout)
        n_plain = n_tiles - 1 if CAUSAL else n_tiles
        for j in range(1, n_plain):
            p, m_i, l_i, acc = _consumer_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, p,
                                              m_i, l_i, acc, s_zero, j, j, my_row0, qk_scale, wg, False, ROWS,
                                              BLOCK_N, STAGES, NUM_WG, s_layout, o_layout, p_layout)
        if CAUSAL:
            if n_tiles > 1:
                p, m_i, l_i, acc = _consumer_step(q_smem, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn,
                                                  p, m_i, l_i, acc, s_zero, n_tiles - 1, n_tiles - 1, my_row0,
                                                  qk_scale, wg, True, ROWS, BLOCK_N, STAGES, NUM_WG, s_layout,
                                                  o_layout, p_layout)
        last = n_tiles - 1
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        p_op = gl.convert_layout(p.to(dtype), p_layout)
        _wait_turn(turn, wg, n_tiles, NUM_WG)
        acc = warpgroup_mma(p_op, v_smem.index(last % STAGES), acc, is_async=True)
        _pass_turn(turn, wg, NUM_WG)
        acc = warpgroup_mma_wait(0, deps=(acc, ))
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
    out = (acc / l_o[:, None]).to(dtype)
    rows = gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
    gl.store(lse_ptr + lse_row + wg * ROWS + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453)
    q_smem.store(out)
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [q_row + wg * ROWS, 0], q_smem)
    tma.store_wait(0)


@gluon.jit
def attention_fwd_ws(q_desc, k_desc, v_desc, o_desc, lse_ptr, seq_len, qk_scale, CAUSAL: gl.constexpr,
                     ROWS: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                     NUM_WG: gl.constexpr, CONSUMER_REGS: gl.constexpr, LOADER_WARPS: gl.constexpr,
                     OVERLAP: gl.constexpr, num_warps: gl.constexpr):
    BLOCK_M: gl.constexpr = ROWS * NUM_WG
    n_m = gl.num_programs(0)
    pid_m = n_m - 1 - gl.program_id(0)  # the longest causal rows first
    bh = gl.program_id(1)
    row0 = pid_m * BLOCK_M
    q_row = bh * seq_len + row0
    kv_row0 = bh * seq_len
    if CAUSAL:
        n_tiles = gl.cdiv(row0 + BLOCK_M, BLOCK_N)
    else:
        n_tiles = gl.cdiv(seq_len, BLOCK_N)

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [BLOCK_M, HEAD_D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_N, HEAD_D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, BLOCK_N, HEAD_D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=NUM_WG)
        mbarrier.init(v_empty.index(i), count=NUM_WG)
    for i in gl.static_range(NUM_WG):
        mbarrier.init(turn.index(i), count=1)
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [q_row, 0], q_bar, q_smem)

    loader_args = (k_desc, v_desc, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, kv_row0, n_tiles, BLOCK_N,
                   STAGES)
    if NUM_WG == 1:
        gl.warp_specialize([
            (_consumer, (0, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, lse_ptr,
                         o_desc, q_row, q_row, row0, n_tiles, qk_scale, CAUSAL, ROWS, BLOCK_N, HEAD_D, STAGES,
                         NUM_WG, num_warps, OVERLAP)),
            (_loader, loader_args),
        ], [LOADER_WARPS], [24])
    else:
        gl.warp_specialize([
            (_consumer, (0, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, lse_ptr,
                         o_desc, q_row, q_row, row0, n_tiles, qk_scale, CAUSAL, ROWS, BLOCK_N, HEAD_D, STAGES,
                         NUM_WG, num_warps, OVERLAP)),
            (_consumer, (1, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, lse_ptr,
                         o_desc, q_row, q_row, row0, n_tiles, qk_scale, CAUSAL, ROWS, BLOCK_N, HEAD_D, STAGES,
                         NUM_WG, num_warps, OVERLAP)),
            (_loader, loader_args),
        ], [num_warps, LOADER_WARPS], [CONSUMER_REGS, 24])


def launch_args(q, k, v, causal, rows=128, block_n=128, stages=2, num_wg=1, overlap=True, regs=232,
                loader_warps=4):
    """(grid, args, kwargs, out, lse) for q, k, v of [B, H, S, D] (S a multiple of the tiles): `num_wg`
    consumer warpgroups of `rows` query rows each (rows / 16 warps), ping-ponging when more than one."""
    B, H, S, D = q.shape
    block_m = rows * num_wg
    assert S % block_m == 0 and S % block_n == 0, "probe: S must be a multiple of the tiles"
    dt = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    q2, k2, v2 = (t.reshape(B * H * S, D) for t in (q, k, v))
    out = torch.empty_like(q)
    lse = torch.empty(B, H, S, dtype=torch.float32, device=q.device)
    q_layout = gl.NVMMASharedLayout.get_default_for([block_m, D], dt)
    o_layout = gl.NVMMASharedLayout.get_default_for([rows, D], dt)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, D], dt)
    q_desc = TensorDescriptor.from_tensor(q2, [block_m, D], q_layout)
    k_desc = TensorDescriptor.from_tensor(k2, [block_n, D], kv_layout)
    v_desc = TensorDescriptor.from_tensor(v2, [block_n, D], kv_layout)
    o_desc = TensorDescriptor.from_tensor(out.reshape(B * H * S, D), [rows, D], o_layout)
    scale = 1.0 / math.sqrt(D)
    grid = (S // block_m, B * H)
    args = (q_desc, k_desc, v_desc, o_desc, lse, S, scale * LOG2E)
    kwargs = dict(CAUSAL=causal, ROWS=rows, BLOCK_N=block_n, HEAD_D=D, STAGES=stages, NUM_WG=num_wg,
                  CONSUMER_REGS=regs, LOADER_WARPS=loader_warps, OVERLAP=overlap, num_warps=rows // 16)
    return grid, args, kwargs, out, lse


def cross(cases) -> None:
    """Compile each case for sm_90 on this (GPU-less) machine and print ptxas's resource use."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import create_function_from_signature
    from build_tools.cross_compile import CrossCompiled
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    fn = attention_fwd_ws
    for D, causal, rows, bn, stages, num_wg, overlap in cases:
        q = torch.empty(1, 2, 256, D, dtype=torch.bfloat16)
        _, args, kwargs, _, _ = launch_args(q, q, q, causal, rows, bn, stages, num_wg, overlap)
        binder = create_function_from_signature(fn.signature, fn.params, backend)
        bound_args, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound_args, specialization, options)
        compiled = triton.compile(GluonASTSource(fn, signature, constexprs, attrs), target=target,
                                  options=options.__dict__)
        info = CrossCompiled(fn.__name__, target, compiled.asm, 0)
        ttgir = compiled.asm["ttgir"]
        print(f"D{D} causal={causal} {num_wg}x{rows} rows, {bn} keys, stages={stages} overlap={overlap}: "
              f"{info.ptxas_info()} "
              f"local_load={ttgir.count('ttg.local_load')} local_store={ttgir.count('ttg.local_store')} "
              f"setmaxnreg={sorted(set(re.findall(SETMAXNREG, compiled.asm['ptx'])))} "
              f"maxnreg={re.findall(r'[.]maxnreg [0-9]+', compiled.asm['ptx'])}",
              flush=True)


# (head dim, causal, rows per consumer warpgroup, key tile, stages, consumer warpgroups, overlapped dots)
CASES = [(D, causal, 64, 128, 2, 2, overlap) for D in (128, 64) for causal in (False, True) for overlap in (True, False)]
CASES += [(128, False, 128, 128, 2, 1, False)]


def run(out_dir: str, seqs, quick: bool) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import helion_kernels
    from benchmarks.timing import Timer
    timer = Timer(torch.device("cuda"))
    results = []
    B, H = 4, 32
    for D, causal, rows, bn, stages, num_wg, overlap in CASES:
        for S in seqs:
            torch.manual_seed(S + D)
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            grid, args, kwargs, out, lse = launch_args(q, k, v, causal, rows, bn, stages, num_wg, overlap)
            case = dict(D=D, causal=causal, S=S, rows=rows, num_wg=num_wg, block_n=bn, stages=stages, overlap=overlap)
            try:
                out.fill_(float("nan"))
                lse.fill_(float("nan"))
                attention_fwd_ws[grid](*args, **kwargs)
                torch.cuda.synchronize()
                sub = (slice(0, 1), slice(0, 4))  # the reference in float64 on 4 heads
                qs, ks, vs = (t[sub].double() for t in (q, k, v))
                scores = (qs @ ks.transpose(-1, -2)) / math.sqrt(D)
                if causal:
                    scores = scores.masked_fill(torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1),
                                                float("-inf"))
                ref = torch.softmax(scores, -1) @ vs
                ref_lse = torch.logsumexp(scores, -1)
                del scores
                case["max_err_out"] = float((out[sub].double() - ref).abs().max())
                case["max_err_lse"] = float((lse[sub].double() - ref_lse).abs().max())
                case["unwritten"] = int(out.isnan().sum() + lse.isnan().sum())
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    cudnn_out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                case["cudnn_err_out"] = float((cudnn_out[sub].double() - ref).abs().max())

                def cudnn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

                times = timer.device_rounds({
                    "gluon": lambda: attention_fwd_ws[grid](*args, **kwargs),
                    "ours": lambda: helion_kernels.scaled_dot_product_attention(q, k, v, is_causal=causal),
                    "cudnn": cudnn}, rounds=5)
                import statistics
                flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
                for name, runs in times.items():
                    us = statistics.median(runs)
                    case[f"{name}_us"] = us
                    case[f"{name}_tflops"] = flops / us / 1e6
                case["gluon_vs_cudnn"] = case["cudnn_us"] / case["gluon_us"]
                case["gluon_vs_ours"] = case["ours_us"] / case["gluon_us"]
            except Exception as error:  # noqa: BLE001 - reported per case
                case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
            results.append(case)
            print(json.dumps(case), flush=True)
            with open(os.path.join(out_dir, "gluon_attention_probe.json"), "w") as fh:
                json.dump(results, fh, indent=1)
            if quick:
                break


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("cross", "run"))
    parser.add_argument("--out", default=".")
    parser.add_argument("--seqs", default="1024,2048,4096,8192")
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args(argv)
    if opts.mode == "cross":
        cross(CASES)
    else:
        run(opts.out, [int(s) for s in opts.seqs.split(",")], opts.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
