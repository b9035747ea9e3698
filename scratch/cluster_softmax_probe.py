"""Probe: can Triton 3.6 spread one program's whole-row softmax over a thread-block cluster
(`num_ctas` > 1 on sm_90), so that a 131072- or 262144-element row is reduced on chip (distributed
shared memory) instead of exchanging partial results through L2? Hand-written Triton, an
experiment: compiles each (num_ctas, num_warps) case, checks it against torch, times it
(benchmarks.timing.Timer) against the library's softmax in one process."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import triton
import triton.language as tl
import helion_kernels as hk
from benchmarks.timing import Timer


@triton.jit
def whole_row_softmax(x, out, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n
    values = tl.load(x + row * n + cols, mask=inside, other=float("-inf")).to(tl.float32)
    row_max = tl.max(values, 0)
    exps = tl.exp(values - row_max)
    total = tl.sum(exps, 0)
    tl.store(out + row * n + cols, (exps / total).to(out.dtype.element_ty), mask=inside)


def main():
    timer = Timer(torch.device("cuda"))
    dims = [int(v) for v in sys.argv[1:]] or [4096, 131072]
    rows = []
    for m, n in zip(dims[0::2], dims[1::2]):
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g) * 3
        ref = torch.softmax(x.float(), -1)
        fns = {"library": lambda: hk.softmax(x, -1)}
        block = triton.next_power_of_2(n)
        for ctas in (2, 4, 8, 16):
            for warps in (4, 8, 16):
                out = torch.empty_like(x)
                label = f"num_ctas={ctas} num_warps={warps}"
                try:
                    kernel = whole_row_softmax[(m,)](x, out, n, BLOCK=block, num_warps=warps, num_ctas=ctas)
                    torch.cuda.synchronize()
                    err = (out.float() - ref).abs().max().item()
                    info = {"regs": kernel.n_regs, "spills": kernel.n_spills, "smem": kernel.metadata.shared, "max_err": err}
                except Exception as error:
                    print(json.dumps({"shape": [m, n], "case": label, "error": str(error)[:300]}), flush=True)
                    continue
                print(json.dumps({"shape": [m, n], "case": label, **info}), flush=True)
                if err < 1e-2:
                    fns[label] = (lambda c, w, o: lambda: whole_row_softmax[(m,)](x, o, n, BLOCK=block, num_warps=w, num_ctas=c))(ctas, warps, out)
        times = {k: [] for k in fns}
        for _ in range(5):
            for k, f in fns.items():
                times[k].append(timer.device_us(f))
        row = {"shape": [m, n], "us": {k: statistics.median(v) for k, v in times.items()}}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "cluster_softmax_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
