"""Feasibility probe for a Gluon back end, matmul: a warp-specialized Hopper matmul written with Triton
3.6's Gluon against cuBLAS and the library's matmul, in one process.

    python3 scratch/gluon_matmul_probe.py cross            # compile for sm_90 here (no GPU)
    python3 scratch/gluon_matmul_probe.py run --out $OUT   # on the GPU: check and time

A loader partition (4 warps, 24 registers) streams A [BM, BK] and B [BK, BN] tiles by TMA
through a STAGES-deep shared-memory ring. The consumer partition (BM / 16 warps) chains
asynchronous wgmmas on one accumulator and keeps one in flight (`warpgroup_mma_wait(1)`), releasing
a slot as soon as the wgmma that read it is done. The epilogue goes through shared memory and a TMA
store. Programs walk output tiles in groups of GROUP_M rows of tiles, so that programs running together
share A and B in L2. Hand-written only to measure; nothing of it ships.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)


@gluon.jit
def _loader(a_desc, b_desc, a_smem, b_smem, ready, empty, off_m, off_n, k_tiles, BK: gl.constexpr,
            STAGES: gl.constexpr):
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [off_m, i * BK], ready.index(slot), a_smem.index(slot))
        tma.async_copy_global_to_shared(b_desc, [i * BK, off_n], ready.index(slot), b_smem.index(slot))


@gluon.jit
def _consumer(a_smem, b_smem, ready, empty, c_desc, off_m, off_n, k_tiles, BM: gl.constexpr, BN: gl.constexpr,
              STAGES: gl.constexpr, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BN, 16])
    acc = gl.zeros([BM, BN], gl.float32, layout)
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        acc = warpgroup_mma(a_smem.index(slot), b_smem.index(slot), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=(acc, ))
        if i > 0:
            mbarrier.arrive(empty.index((i - 1) % STAGES))
    acc = warpgroup_mma_wait(0, deps=(acc, ))
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def matmul_ws(a_desc, b_desc, c_desc, M, N, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
              STAGES: gl.constexpr, GROUP_M: gl.constexpr, num_warps: gl.constexpr):
    pid = gl.program_id(0)
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = gl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    off_m = pid_m * BM
    off_n = pid_n * BN
    k_tiles = gl.cdiv(K, BK)
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    gl.warp_specialize([
        (_consumer, (a_smem, b_smem, ready, empty, c_desc, off_m, off_n, k_tiles, BM, BN, STAGES, num_warps)),
        (_loader, (a_desc, b_desc, a_smem, b_smem, ready, empty, off_m, off_n, k_tiles, BK, STAGES)),
    ], [4], [24])


def launch_args(a, b, bm=128, bn=256, bk=64, stages=3, group_m=8):
    M, K = a.shape
    N = b.shape[1]
    dt = gl.bfloat16 if a.dtype == torch.bfloat16 else gl.float16
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk], gl.NVMMASharedLayout.get_default_for([bm, bk], dt))
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn], gl.NVMMASharedLayout.get_default_for([bk, bn], dt))
    c_desc = TensorDescriptor.from_tensor(c, [bm, bn], gl.NVMMASharedLayout.get_default_for([bm, bn], dt))
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), )
    kwargs = dict(BM=bm, BN=bn, BK=bk, STAGES=stages, GROUP_M=group_m, num_warps=bm // 16)
    return grid, (a_desc, b_desc, c_desc, M, N, K), kwargs, c


# (BM, BN, BK, stages)
CASES = [(128, 256, 64, 3), (128, 128, 64, 4), (128, 256, 64, 4)]
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 11008), (4096, 11008, 4096), (128, 11008, 4096)]
CHECK_SHAPES = [(1000, 1000, 1000), (1, 129, 77), (300, 520, 4096)]


def cross(cases) -> None:
    from build_tools.cross_compile import compile_launch
    fn = matmul_ws
    for bm, bn, bk, stages in cases:
        a = torch.empty(512, 512, dtype=torch.bfloat16)
        _, args, kwargs, _ = launch_args(a, a, bm, bn, bk, stages)
        compiled = compile_launch(fn, args, kwargs)
        print(f"[{bm}, {bn}, {bk}] stages {stages}: {compiled.ptxas_info()}",
              flush=True)


def run(out_dir: str) -> None:
    import helion_kernels
    from benchmarks.timing import Timer
    timer = Timer(torch.device("cuda"))
    results = []
    for bm, bn, bk, stages in CASES:
        base = dict(BM=bm, BN=bn, BK=bk, stages=stages)
        worst = 0.0
        for M, N, K in CHECK_SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
            if (N * 2) % 16 or (K * 2) % 16:
                continue  # TMA needs 16-byte row strides
            grid, args, kwargs, c = launch_args(a, b, bm, bn, bk, stages)
            c.fill_(float("nan"))
            matmul_ws[grid](*args, **kwargs)
            ref = a.double() @ b.double()
            worst = max(worst, float(((c.double() - ref).abs() / (ref.abs() + 1)).max()))
        results.append(dict(base, shape="check", max_rel_err=worst))
        print(json.dumps(results[-1]), flush=True)
        for M, N, K in SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
            grid, args, kwargs, c = launch_args(a, b, bm, bn, bk, stages)
            case = dict(base, shape=[M, N, K])
            try:
                matmul_ws[grid](*args, **kwargs)
                case["max_diff_cublas"] = float((c.float() - (a @ b).float()).abs().max())
                times = timer.device_rounds({
                    "gluon": lambda: matmul_ws[grid](*args, **kwargs),
                    "ours": lambda: helion_kernels.matmul(a, b),
                    "cublas": lambda: torch.mm(a, b)}, rounds=5)
                for name, runs in times.items():
                    us = statistics.median(runs)
                    case[f"{name}_us"] = us
                    case[f"{name}_tflops"] = 2 * M * N * K / us / 1e6
                case["gluon_vs_cublas"] = case["cublas_us"] / case["gluon_us"]
                case["ours_vs_cublas"] = case["cublas_us"] / case["ours_us"]
            except Exception as error:  # noqa: BLE001 - reported per case
                case["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
            results.append(case)
            print(json.dumps(case), flush=True)
        with open(os.path.join(out_dir, "gluon_matmul_probe.json"), "w") as fh:
            json.dump(results, fh, indent=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("cross", "run"))
    parser.add_argument("--out", default=".")
    opts = parser.parse_args(argv)
    if opts.mode == "cross":
        cross(CASES)
    else:
        run(opts.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
