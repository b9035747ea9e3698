"""Feasibility probe for a Gluon back end, backward half: a one-pass attention backward (five dots per
step, dq accumulated by fp32 atomics) written with Triton 3.6's Gluon, against cuDNN and the
library's backward, in one process.

    python3 scratch/gluon_attention_bwd_probe.py cross            # compile for sm_90 here (no GPU)
    python3 scratch/gluon_attention_bwd_probe.py run --out $OUT   # on the GPU: check and time

One program per key tile of BLOCK_N keys (of one batch x head). A loader partition streams query
tiles of q and dO through a shared-memory ring by TMA. Two consumer warpgroups each own BLOCK_N / 2
keys and keep their dK and dV accumulators in registers (warp-specialized, 240 registers each: the
one-pass backward spilled at 255 registers in plain Triton, benchmarks/MISSED.md). Per query tile,
each warpgroup runs Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, then dV += Pᵀ·dO and dK += dSᵀ·Q. It writes its
rows of dSᵀ to shared memory, and both warpgroups then compute one half each of dQ = dS·K
(columns split), added to an fp32 buffer by atomics. Host side: delta = rowsum(dO * O), the
buffer's zeroing and its final cast, all inside the timed region. Hand-written only to measure
what such a back end would reach; nothing of it ships.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gluon_attention_probe as fwd_probe  # noqa: E402 - the forward (out, lse) and the timing rows

LOG2E = 1.4426950408889634
ATOMIC = re.compile(r"\b(?:red|atom)\.[.a-z0-9]*")


@gluon.jit
def _loader(q_desc, do_desc, q_smem, do_smem, q_ready, do_ready, q_empty, do_empty, head, m_first, n_steps,
            BLOCK_M: gl.constexpr, STAGES: gl.constexpr):
    for i in range(n_steps):
        slot = i % STAGES
        phase = (i // STAGES) & 1
        m0 = (m_first + i) * BLOCK_M
        mbarrier.wait(q_empty.index(slot), phase ^ 1)
        mbarrier.expect(q_ready.index(slot), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [head, m0, 0], q_ready.index(slot), q_smem.index(slot))
        mbarrier.wait(do_empty.index(slot), phase ^ 1)
        mbarrier.expect(do_ready.index(slot), do_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(do_desc, [head, m0, 0], do_ready.index(slot), do_smem.index(slot))


@gluon.jit
def _consumer(wg: gl.constexpr, k_smem_all, v_smem_all, q_smem, do_smem, ds_smem, kv_bar, q_ready, do_ready, q_empty,
              do_empty, ds_ready, ds_free, lse_ptr, delta_ptr, dq_ptr, dk_ptr, dv_ptr, head, n0, m_first, n_steps,
              q_len, kv_len, qk_scale, scale, CAUSAL: gl.constexpr, KEYS: gl.constexpr, BLOCK_M: gl.constexpr,
              HEAD_D: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr):
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BLOCK_M, 16])
    kv_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                        instr_shape=[16, HEAD_D, 16])
    HALF_D: gl.constexpr = HEAD_D // 2
    dq_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                        instr_shape=[16, HALF_D, 16])
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=kv_layout, k_width=2)
    dtype: gl.constexpr = q_smem.dtype

    k_mine = k_smem_all.slice(wg * KEYS, KEYS)
    v_mine = v_smem_all.slice(wg * KEYS, KEYS)
    k_half = k_smem_all.slice(wg * HALF_D, HALF_D, dim=1)
    acc_k = gl.zeros([KEYS, HEAD_D], gl.float32, kv_layout)
    acc_v = gl.zeros([KEYS, HEAD_D], gl.float32, kv_layout)
    s_zero = gl.zeros([KEYS, BLOCK_M], gl.float32, s_layout)
    dq_zero = gl.zeros([BLOCK_M, HALF_D], gl.float32, dq_layout)
    keys = n0 + wg * KEYS + gl.arange(0, KEYS, gl.SliceLayout(1, s_layout))
    mbarrier.wait(kv_bar, 0)

    for i in range(n_steps):
        slot = i % STAGES
        phase = (i // STAGES) & 1
        m0 = (m_first + i) * BLOCK_M
        q_tile = q_smem.index(slot).reshape([BLOCK_M, HEAD_D])
        do_tile = do_smem.index(slot).reshape([BLOCK_M, HEAD_D])
        mbarrier.wait(q_ready.index(slot), phase)
        st_tok = warpgroup_mma(k_mine, q_tile.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        mbarrier.wait(do_ready.index(slot), phase)
        dpt_tok = warpgroup_mma(v_mine, do_tile.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        cols = m0 + gl.arange(0, BLOCK_M, gl.SliceLayout(0, s_layout))
        in_q = cols < q_len
        lse = gl.load(lse_ptr + head.to(gl.int64) * q_len + cols, mask=in_q, other=0.0) * 1.4426950408889634
        delta = gl.load(delta_ptr + head.to(gl.int64) * q_len + cols, mask=in_q, other=0.0)
        keep = in_q[None, :]
        if CAUSAL:
            keep = keep & (keys[:, None] <= cols[None, :])
        st = warpgroup_mma_wait(1, deps=(st_tok, ))
        pt = gl.where(keep, gl.exp2(st * qk_scale - lse[None, :]), 0.0)
        dv_tok = warpgroup_mma(gl.convert_layout(pt.to(dtype), a_layout), do_tile, acc_v, is_async=True)
        dpt = warpgroup_mma_wait(1, deps=(dpt_tok, ))
        dst = (pt * (dpt - delta[None, :])).to(dtype)
        dk_tok = warpgroup_mma(gl.convert_layout(dst, a_layout), q_tile, acc_k, is_async=True)
        # dSᵀ of both warpgroups in shared memory, once the previous step's dQ dots are done with it
        mbarrier.wait(ds_free, (i & 1) ^ 1)
        ds_smem.slice(wg * KEYS, KEYS).store(dst)
        fence_async_shared()
        mbarrier.arrive(ds_ready)
        mbarrier.wait(ds_ready, i & 1)
        dq_tok = warpgroup_mma(ds_smem.permute((1, 0)), k_half, dq_zero, use_acc=False, is_async=True)
        acc_v, acc_k, dq = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok))
        mbarrier.arrive(ds_free)
        mbarrier.arrive(q_empty.index(slot))
        mbarrier.arrive(do_empty.index(slot))
        rows = m0 + gl.arange(0, BLOCK_M, gl.SliceLayout(1, dq_layout))
        dcols = wg * HALF_D + gl.arange(0, HALF_D, gl.SliceLayout(0, dq_layout))
        offsets = (head.to(gl.int64) * q_len + rows)[:, None] * HEAD_D + dcols[None, :]
        gl.atomic_add(dq_ptr + offsets, dq * scale, mask=(rows < q_len)[:, None], sem="relaxed")

    krows = n0 + wg * KEYS + gl.arange(0, KEYS, gl.SliceLayout(1, kv_layout))
    dcols = gl.arange(0, HEAD_D, gl.SliceLayout(0, kv_layout))
    offsets = (head.to(gl.int64) * kv_len + krows)[:, None] * HEAD_D + dcols[None, :]
    in_k = (krows < kv_len)[:, None]
    gl.store(dk_ptr + offsets, (acc_k * scale).to(dtype), mask=in_k)
    gl.store(dv_ptr + offsets, acc_v.to(dtype), mask=in_k)


@gluon.jit
def attention_bwd_ws(q_desc, do_desc, k_desc, v_desc, lse_ptr, delta_ptr, dq_ptr, dk_ptr, dv_ptr, q_len, kv_len,
                     qk_scale, scale, CAUSAL: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_M: gl.constexpr,
                     HEAD_D: gl.constexpr, STAGES: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                     num_warps: gl.constexpr):
    """One program per (key tile, batch x head), MHA (q, k, v, dO as [batch x heads, S, D])."""
    KEYS: gl.constexpr = BLOCK_N // 2
    n_tile = gl.num_programs(0) - 1 - gl.program_id(0)  # the longest causal work first
    head = gl.program_id(1)
    n0 = n_tile * BLOCK_N
    if CAUSAL:
        m_first = gl.minimum(n0, q_len) // BLOCK_M
    else:
        m_first = 0
    n_steps = gl.cdiv(q_len, BLOCK_M) - m_first

    k_smem = gl.allocate_shared_memory(k_desc.dtype, [1, BLOCK_N, HEAD_D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [1, BLOCK_N, HEAD_D], v_desc.layout)
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, 1, BLOCK_M, HEAD_D], q_desc.layout)
    do_smem = gl.allocate_shared_memory(do_desc.dtype, [STAGES, 1, BLOCK_M, HEAD_D], do_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_M], q_desc.dtype)
    ds_smem = gl.allocate_shared_memory(q_desc.dtype, [BLOCK_N, BLOCK_M], ds_layout)
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    do_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    do_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    ds_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ds_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(kv_bar, count=1)
    mbarrier.init(ds_ready, count=2)
    mbarrier.init(ds_free, count=2)
    for i in gl.static_range(STAGES):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(do_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=2)
        mbarrier.init(do_empty.index(i), count=2)
    mbarrier.expect(kv_bar, k_desc.block_type.nbytes + v_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(k_desc, [head, n0, 0], kv_bar, k_smem)
    tma.async_copy_global_to_shared(v_desc, [head, n0, 0], kv_bar, v_smem)
    k2 = k_smem.reshape([BLOCK_N, HEAD_D])
    v2 = v_smem.reshape([BLOCK_N, HEAD_D])

    gl.warp_specialize([
        (_consumer, (0, k2, v2, q_smem, do_smem, ds_smem, kv_bar, q_ready, do_ready, q_empty, do_empty, ds_ready,
                     ds_free, lse_ptr, delta_ptr, dq_ptr, dk_ptr, dv_ptr, head, n0, m_first, n_steps, q_len, kv_len,
                     qk_scale, scale, CAUSAL, KEYS, BLOCK_M, HEAD_D, STAGES, num_warps)),
        (_consumer, (1, k2, v2, q_smem, do_smem, ds_smem, kv_bar, q_ready, do_ready, q_empty, do_empty, ds_ready,
                     ds_free, lse_ptr, delta_ptr, dq_ptr, dk_ptr, dv_ptr, head, n0, m_first, n_steps, q_len, kv_len,
                     qk_scale, scale, CAUSAL, KEYS, BLOCK_M, HEAD_D, STAGES, num_warps)),
        (_loader, (q_desc, do_desc, q_smem, do_smem, q_ready, do_ready, q_empty, do_empty, head, m_first, n_steps,
                   BLOCK_M, STAGES)),
    ], [num_warps, 4], [CONSUMER_REGS, 24])


def launch_args(q, k, v, grad_out, out, lse, causal, block_n=128, block_m=64, stages=2):
    """(grid, args, kwargs, buffers) of the main kernel for MHA inputs of [B, H, S, D]."""
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    dt = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    q_layout = gl.NVMMASharedLayout.get_default_for([1, block_m, D], dt)
    kv_layout = gl.NVMMASharedLayout.get_default_for([1, block_n, D], dt)
    q_desc = TensorDescriptor.from_tensor(q.reshape(B * H, Sq, D), [1, block_m, D], q_layout)
    do_desc = TensorDescriptor.from_tensor(grad_out.reshape(B * H, Sq, D), [1, block_m, D], q_layout)
    k_desc = TensorDescriptor.from_tensor(k.reshape(B * H, Sk, D), [1, block_n, D], kv_layout)
    v_desc = TensorDescriptor.from_tensor(v.reshape(B * H, Sk, D), [1, block_n, D], kv_layout)
    delta = torch.empty(B, H, Sq, dtype=torch.float32, device=q.device)
    dq_accum = torch.empty(B, H, Sq, D, dtype=torch.float32, device=q.device)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    scale = 1.0 / math.sqrt(D)
    grid = (triton.cdiv(Sk, block_n), B * H)
    args = (q_desc, do_desc, k_desc, v_desc, lse, delta, dq_accum, dk, dv, Sq, Sk, scale * LOG2E, scale)
    kwargs = dict(CAUSAL=causal, BLOCK_N=block_n, BLOCK_M=block_m, HEAD_D=D, STAGES=stages, CONSUMER_REGS=240,
                  num_warps=4)
    return grid, args, kwargs, (delta, dq_accum, dk, dv)


def backward(grid, args, kwargs, buffers, grad_out, out, dtype):
    """The whole backward: delta, the zeroed dq buffer, the main kernel, dq's cast."""
    delta, dq_accum, dk, dv = buffers
    torch.sum(grad_out.float() * out.float(), dim=-1, out=delta)
    dq_accum.zero_()
    attention_bwd_ws[grid](*args, **kwargs)
    return dq_accum.to(dtype), dk, dv


def cross(cases) -> None:
    """Compile each case for sm_90 on this (GPU-less) machine and print ptxas's resource use."""
    from build_tools.cross_compile import compile_launch
    fn = attention_bwd_ws
    for D, causal, block_n, block_m, stages in cases:
        q = torch.empty(1, 2, 256, D, dtype=torch.bfloat16)
        lse = torch.empty(1, 2, 256, dtype=torch.float32)
        _, args, kwargs, _ = launch_args(q, q, q, q, q, lse, causal, block_n, block_m, stages)
        compiled = compile_launch(fn, args, kwargs)
        ptx = compiled.asm["ptx"]
        print(f"D{D} causal={causal} keys {block_n} queries {block_m} stages {stages}: {compiled.ptxas_info()} "
              f"atomics={sorted(set(ATOMIC.findall(ptx)))} bar.sync={ptx.count('bar.sync')}", flush=True)


# (head dim, causal, key tile, query tile, stages)
CASES = [(128, False, 128, 64, 2), (128, True, 128, 64, 2), (64, False, 128, 64, 2), (64, True, 128, 64, 2),
         (64, False, 128, 128, 2)]
# (B, H, Sq, Sk): checked, not timed
CHECK_SHAPES = [(2, 4, 1000, 1000), (1, 4, 300, 777), (1, 4, 777, 300), (1, 2, 1, 129), (1, 2, 65, 1)]


def reference(q, k, v, grad_out, causal):
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    qd, kd, vd = leaves
    scores = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        scores = scores.masked_fill(torch.ones(sq, sk, device=q.device, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(scores, -1) @ vd
    return torch.autograd.grad(out, leaves, grad_out.double())


def forward(q, k, v, causal):
    """(out, lse) from the forward probe (MHA)."""
    grid, args, kwargs, out, lse = fwd_probe.launch_args(q, k, v, causal, rows=64, block_n=128, stages=2, num_wg=2)
    fwd_probe.attention_fwd_ws[grid](*args, **kwargs)
    return out, lse


def check(case, D, causal, block_n, block_m, stages) -> None:
    worst = [0.0, 0.0, 0.0]
    unwritten = 0
    for B, H, Sq, Sk in CHECK_SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(Sq * 7 + Sk)
        q = torch.randn(B, H, Sq, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        k, v = (torch.randn(B, H, Sk, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
        grad_out = torch.randn(B, H, Sq, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        out, lse = forward(q, k, v, causal)
        grid, args, kwargs, buffers = launch_args(q, k, v, grad_out, out, lse, causal, block_n, block_m, stages)
        buffers[2].fill_(float("nan"))
        buffers[3].fill_(float("nan"))
        got = backward(grid, args, kwargs, buffers, grad_out, out, q.dtype)
        want = reference(q, k, v, grad_out, causal)
        for n, (g, w) in enumerate(zip(got, want)):
            unwritten += int(g.isnan().sum())
            worst[n] = max(worst[n], float((g.double() - w).abs().max()))
    case.update(check_err_dq=worst[0], check_err_dk=worst[1], check_err_dv=worst[2], check_unwritten=unwritten)


def run(out_dir: str, seqs) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import helion_kernels
    from benchmarks.timing import Timer
    timer = Timer(torch.device("cuda"))
    results = []
    B, H = 4, 32
    for D, causal, block_n, block_m, stages in CASES:
        base = dict(D=D, causal=causal, block_n=block_n, block_m=block_m, stages=stages)
        case = dict(base, S="check")
        try:
            check(case, D, causal, block_n, block_m, stages)
        except Exception as error:  # noqa: BLE001 - reported per case
            case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
        results.append(case)
        print(json.dumps(case), flush=True)
        for S in ([] if "error" in case else seqs):
            torch.manual_seed(S + D)
            q, k, v, grad_out = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            case = dict(base, S=S)
            try:
                out, lse = forward(q, k, v, causal)
                grid, args, kwargs, buffers = launch_args(q, k, v, grad_out, out, lse, causal, block_n, block_m,
                                                          stages)
                leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                ours_out = helion_kernels.scaled_dot_product_attention(*leaves, is_causal=causal)
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    cudnn_out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
                got = backward(grid, args, kwargs, buffers, grad_out, out, q.dtype)
                want = torch.autograd.grad(cudnn_out, leaves, grad_out, retain_graph=True)
                case["max_diff_cudnn"] = max(float((g.float() - w.float()).abs().max()) for g, w in zip(got, want))
                case.update(fwd_probe.timed(timer, {
                    "gluon": lambda: backward(grid, args, kwargs, buffers, grad_out, out, q.dtype),
                    "ours": lambda: torch.autograd.grad(ours_out, leaves, grad_out, retain_graph=True),
                    "cudnn": lambda: torch.autograd.grad(cudnn_out, leaves, grad_out, retain_graph=True)},
                    2.5 * 4 * B * H * S * S * D * (0.5 if causal else 1.0)))
            except Exception as error:  # noqa: BLE001 - reported per case
                case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
            results.append(case)
            print(json.dumps(case), flush=True)
        with open(os.path.join(out_dir, "gluon_attention_bwd_probe.json"), "w") as fh:
            json.dump(results, fh, indent=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("cross", "run"))
    parser.add_argument("--out", default=".")
    parser.add_argument("--seqs", default="1024,2048,4096,8192")
    opts = parser.parse_args(argv)
    if opts.mode == "cross":
        cross(CASES)
    else:
        run(opts.out, [int(s) for s in opts.seqs.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
