"""Probe: Triton 3.6's Hopper automatic warp specialization (`tl.range(..., warp_specialize=True)`)
on hand-written attention-forward and persistent-matmul loops with on-device tensor descriptors.

Cross-compiled for sm_90, such a loop is warp-specialized only at num_warps=4: the kernel comes
out with 12 warps (a producer warpgroup issuing the TMA loads and two consumer warpgroups that
split the block's rows, with `setmaxnreg`), while at num_warps=8 the flag leaves the PTX without
`setmaxnreg`. Pointer loads crash the pass (NVGPUWarpSpecialization, a dominance assertion).
This times warp-specialized variants against the plain schedule, the library and cuDNN / cuBLAS
in one process (benchmarks.timing.Timer: CUDA events, L2 flushed, alternating rounds). Outputs
are poisoned since the nineteenth session's bisect (scratch/ws_bisect_probe.py): the timings in
ws_probe_h100.json / ws_probe_masked_h100.json were taken with empty outputs, so the correctness
of their variants other than [128, 128] and [128, 64] at 2 stages (right in the bisect) and
[128, 64] at 3 stages (wrong there) is not established.
Run: python3 scratch/ws_probe.py (writes $OUT/ws_probe.json)."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import helion_kernels as hk
from benchmarks.timing import Timer


@triton.jit
def attn_fwd(Q, K, V, O, qk_scale, BH, S, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, WS: tl.constexpr,
             MASKED: tl.constexpr):
    rows = BH * S
    q_desc = tl.make_tensor_descriptor(Q, [rows, D], [D, 1], [BM, D])
    k_desc = tl.make_tensor_descriptor(K, [rows, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(V, [rows, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(O, [rows, D], [D, 1], [BM, D])
    first = tl.program_id(1) * S
    q_row = first + tl.program_id(0) * BM
    row_max = tl.full([BM], float("-inf"), tl.float32)
    row_sum = tl.full([BM], 1.0, tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    q = q_desc.load([q_row, 0])
    for start in tl.range(0, S, BN, warp_specialize=WS):
        k = k_desc.load([first + start, 0])
        scores = tl.dot(q, k.T) * qk_scale
        if MASKED:  # the DSL's unpeeled loop: every tile masked against the sequence length
            in_range = (start + tl.arange(0, BN)) < S
            new_max = tl.maximum(row_max, tl.max(tl.where(in_range[None, :], scores, float("-inf")), 1))
        else:
            new_max = tl.maximum(row_max, tl.max(scores, 1))
        probs = tl.math.exp2(scores - new_max[:, None])
        if MASKED:
            probs = tl.where(in_range[None, :], probs, 0.0)
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(probs, 1)
        v = v_desc.load([first + start, 0])
        acc = tl.dot(probs.to(v.dtype), v, acc * rescale[:, None])
        row_max = new_max
    o_desc.store([q_row, 0], (acc / row_sum[:, None]).to(O.dtype.element_ty))


@triton.jit
def persistent_mm(a, b, out, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  FLATTEN: tl.constexpr, WS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a, [m, k], [k, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [k, n], [n, 1], [BK, BN])
    out_desc = tl.make_tensor_descriptor(out, [m, n], [n, 1], [BM, BN])
    tiles_m = tl.cdiv(m, BM)
    tiles_n = tl.cdiv(n, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0), flatten=FLATTEN,
                         warp_specialize=WS):
        in_group = 8 * tiles_n
        first = (tile // in_group) * 8
        gsize = tl.minimum(tiles_m - first, 8)
        om = (first + ((tile % in_group) % gsize)) * BM
        on = ((tile % in_group) // gsize) * BN
        acc = tl.zeros([BM, BN], tl.float32)
        for ok in tl.range(0, k, BK):
            acc = tl.dot(a_desc.load([om, ok]), b_desc.load([ok, on]), acc=acc)
        out_desc.store([om, on], acc.to(out.dtype.element_ty))


ATTN = {  # label: (BM, BN, WS, num_warps, num_stages, MASKED)
    "plain w8 128x64 s3": (128, 64, False, 8, 3, False),
    "plain w8 128x128 s2": (128, 128, False, 8, 2, False),
    "ws w4 128x64 s2": (128, 64, True, 4, 2, False),
    "ws w4 128x64 s3": (128, 64, True, 4, 3, False),
    "ws w4 128x128 s2": (128, 128, True, 4, 2, False),
    "ws w4 256x64 s2": (256, 64, True, 4, 2, False),
    "ws w4 256x128 s2": (256, 128, True, 4, 2, False),
    "ws w4 128x128 s2 masked": (128, 128, True, 4, 2, True),
    "ws w4 128x64 s3 masked": (128, 64, True, 4, 3, True),
}
MM = {  # label: (BM, BN, BK, FLATTEN, WS, num_warps, num_stages)
    "plain w8 128x256x64 s3": (128, 256, 64, False, False, 8, 3),
    "flatten w8 128x256x64 s4": (128, 256, 64, True, False, 8, 4),
    "ws w4 128x256x64 s3": (128, 256, 64, False, True, 4, 3),
    "ws w4 128x256x64 s4": (128, 256, 64, False, True, 4, 4),
    "ws w4 128x128x64 s4": (128, 128, 64, False, True, 4, 4),
    "ws w4 256x128x64 s3": (256, 128, 64, False, True, 4, 3),
}


SHAPES = [(4, 32, 1024, 128), (4, 32, 4096, 128), (4, 32, 8192, 128), (4, 32, 4096, 64)]


def attention_rows(timer, device):
    rows = []
    for b, h, s, d in SHAPES:
        g = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device=device, dtype=torch.bfloat16, generator=g) for _ in range(3))
        scale = d ** -0.5
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        fns = {"library": lambda: hk.scaled_dot_product_attention(q, k, v)}

        def cudnn():
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v)
        fns["cudnn"] = cudnn
        errors = {}
        for label, (bm, bn, ws, warps, stages, masked) in ATTN.items():
            def run(bm=bm, bn=bn, ws=ws, warps=warps, stages=stages, masked=masked):
                out = torch.full_like(q, float("nan"))  # unwritten elements show
                attn_fwd[(triton.cdiv(s, bm), b * h)](q, k, v, out, scale * 1.4426950408889634, b * h, s, D=d,
                                                      BM=bm, BN=bn, WS=ws, MASKED=masked, num_warps=warps,
                                                      num_stages=stages)
                return out
            try:
                diff = (run().float() - ref).abs().max().item()
            except Exception as error:  # a variant Triton cannot compile is reported and skipped
                errors[label] = f"{type(error).__name__}: {str(error)[-300:]}"
                continue
            if diff > 0.03:
                errors[label] = f"wrong result: max diff {diff}"
                continue
            fns[label] = run
        us = {name: statistics.median(t) for name, t in timer.device_rounds(fns, rounds=5).items()}
        flops = 4 * b * h * s * s * d
        row = {"attention": [b, h, s, d], "us": us, "tflops": {n: flops / t / 1e6 for n, t in us.items()},
               "vs_cudnn": {n: us["cudnn"] / t for n, t in us.items()}, "errors": errors}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def matmul_rows(timer, device):
    rows = []
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    for m, n, k in [(4096, 4096, 4096), (4096, 4096, 11008), (8192, 8192, 8192)]:
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)
        w = torch.randn(k, n, device=device, dtype=torch.bfloat16, generator=g) / k ** 0.5
        ref = torch.mm(a.float(), w.float())
        fns = {"cublas": lambda: torch.mm(a, w), "library": lambda: hk.matmul(a, w)}
        errors = {}
        for label, (bm, bn, bk, flat, ws, warps, stages) in MM.items():
            def run(bm=bm, bn=bn, bk=bk, flat=flat, ws=ws, warps=warps, stages=stages):
                out = torch.full((m, n), float("nan"), device=device, dtype=a.dtype)  # unwritten elements show
                grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)
                persistent_mm[grid](a, w, out, m, n, k, BM=bm, BN=bn, BK=bk, FLATTEN=flat, WS=ws,
                                    num_warps=warps, num_stages=stages)
                return out
            try:
                diff = (run().float() - ref).abs().max().item()
            except Exception as error:  # a variant Triton cannot compile is reported and skipped
                errors[label] = f"{type(error).__name__}: {str(error)[-300:]}"
                continue
            if diff > 0.1:
                errors[label] = f"wrong result: max diff {diff}"
                continue
            fns[label] = run
        us = {name: statistics.median(t) for name, t in timer.device_rounds(fns, rounds=5).items()}
        row = {"matmul": [m, n, k], "us": us, "tflops": {x: 2 * m * n * k / t / 1e6 for x, t in us.items()},
               "vs_cublas": {x: us["cublas"] / t for x, t in us.items()}, "errors": errors}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main():
    device = torch.device("cuda")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))
    timer = Timer(device)
    rows = {"device": torch.cuda.get_device_name(device)}
    which = sys.argv[1:] or ["attention", "matmul"]
    if "short" in which:  # one D128 shape
        SHAPES[:] = [(4, 32, 4096, 128)]
    if "attention" in which:
        rows["attention"] = attention_rows(timer, device)
    if "matmul" in which:
        rows["matmul"] = matmul_rows(timer, device)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "ws_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
