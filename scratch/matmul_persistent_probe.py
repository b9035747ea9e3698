"""Probe: loop options of the large-product matmul (the tables' 128x256x64, 8-warp, 3-stage
persistent_interleaved config with tensor-descriptor loads and store), hand-varied in Triton.
Variants of the generated kernel (_matmul_kernel_688bc7cbd9), one process, benchmarks.timing.Timer
(CUDA events, L2 write-flushed), alternating rounds, against cuBLAS and hk.matmul:
- flatten: the persistent loop as `tl.range(..., flatten=True)`, so that Triton's pipeliner runs
  the next tile's first loads during this tile's epilogue;
- subtile: the epilogue stores the tile as two [128, 128] halves;
- s4: num_stages 4 instead of 3 (with both of the above; flatten alone at 4 stages needs 256 KB of
  shared memory).
Cross-compiled for sm_90 (Triton 3.6), `warp_specialize=True` on either loop leaves the PTX
unchanged, so it is not timed.
Run: python3 scratch/matmul_persistent_probe.py [M N K ...] (defaults: the four suite products)."""
import itertools, json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import triton
import triton.language as tl
import helion_kernels as hk
from benchmarks.timing import Timer


@triton.jit
def persistent_mm(a, b, out, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  FLATTEN: tl.constexpr, WS_OUTER: tl.constexpr, WS_INNER: tl.constexpr,
                  SUBTILE: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a, [m, k], [k, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [k, n], [n, 1], [BK, BN])
    if SUBTILE:
        out_desc = tl.make_tensor_descriptor(out, [m, n], [n, 1], [BM, BN // 2])
    else:
        out_desc = tl.make_tensor_descriptor(out, [m, n], [n, 1], [BM, BN])
    tiles_m = tl.cdiv(m, BM)
    tiles_n = tl.cdiv(n, BN)
    total = tiles_m * tiles_n
    for tile in tl.range(tl.program_id(0), total, tl.num_programs(0), flatten=FLATTEN,
                         warp_specialize=WS_OUTER):
        in_group = 8 * tiles_n
        group = tile // in_group
        first = group * 8
        gsize = tl.minimum(tiles_m - first, 8)
        pid_m = first + ((tile % in_group) % gsize)
        pid_n = (tile % in_group) // gsize
        om = pid_m * BM
        on = pid_n * BN
        acc = tl.zeros([BM, BN], tl.float32)
        for ok in tl.range(0, k, BK, warp_specialize=WS_INNER):
            acc = tl.dot(a_desc.load([om, ok]), b_desc.load([ok, on]), acc=acc)
        if SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            out_desc.store([om, on], left.to(out.dtype.element_ty))
            out_desc.store([om, on + BN // 2], right.to(out.dtype.element_ty))
        else:
            out_desc.store([om, on], acc.to(out.dtype.element_ty))


VARIANTS = {
    "base": dict(),
    "flatten": dict(FLATTEN=True),
    "subtile": dict(SUBTILE=True),
    "flatten_subtile": dict(FLATTEN=True, SUBTILE=True),
    "flatten_subtile_s4": dict(FLATTEN=True, SUBTILE=True, num_stages=4),
}


def launcher(a, b, options):
    m, k = a.shape
    n = b.shape[1]
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    opts = dict(FLATTEN=False, WS_OUTER=False, WS_INNER=False, SUBTILE=False, num_stages=3)
    opts.update(options)

    def run():
        out = torch.empty(m, n, device=a.device, dtype=a.dtype)
        grid = (min(sms, triton.cdiv(m, 128) * triton.cdiv(n, 256)),)
        persistent_mm[grid](a, b, out, m, n, k, BM=128, BN=256, BK=64, num_warps=8, **opts)
        return out
    return run


def main():
    device = torch.device("cuda")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))
    dims = [int(v) for v in sys.argv[1:]] or [4096, 4096, 4096, 4096, 4096, 11008, 4096, 11008, 4096, 8192, 8192, 8192]
    timer = Timer(device)
    rows = []
    for m, n, k in zip(dims[0::3], dims[1::3], dims[2::3]):
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device=device, dtype=torch.bfloat16, generator=g) / k ** 0.5
        ref = torch.mm(a, b)
        fns = {"cublas": lambda: torch.mm(a, b), "library": lambda: hk.matmul(a, b)}
        errors = {}
        for name, options in VARIANTS.items():
            fn = launcher(a, b, options)
            try:
                got = fn()
            except Exception as error:  # a variant Triton cannot compile is reported and skipped
                errors[name] = f"{type(error).__name__}: {str(error)[:300]}"
                print(json.dumps({"shape": [m, n, k], "variant": name, "error": errors[name]}), flush=True)
                continue
            diff = (got.float() - ref.float()).abs().max().item()
            if diff > 0.05:
                errors[name] = f"wrong result: max diff {diff}"
                continue
            fns[name] = fn
        times = timer.device_rounds(fns, rounds=7)
        us = {name: statistics.median(v) for name, v in times.items()}
        row = {"shape": [m, n, k], "us": us, "tflops": {name: 2 * m * n * k / t / 1e6 for name, t in us.items()},
               "vs_cublas": {name: us["cublas"] / t for name, t in us.items()}, "errors": errors}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "matmul_persistent_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
