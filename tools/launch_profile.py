"""Where a decode-sized call spends its host time (GPU only), layer by layer, for rmsnorm and
softmax forward at M x 4096 bf16 (M = 1, 16, 64): the API call, the generated launcher the
dispatcher selected, each of its launches through Triton's `kernel[grid](...)` and through the
module's `_launch` with the arguments it passed, the compiled kernel's `run` (Triton's launcher:
the floor of a Triton launch), the C launch function under it with tensors and with plain
pointers, the launcher's allocations, and eager PyTorch. Per-call host time of a loop ended by a
synchronize (best of 5), then a cProfile of the M=1 launchers.
`python tools/launch_profile.py [--json PATH]`."""
import argparse
import cProfile
import json
import pstats
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
import helion_kernels as hk  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402

N, EPS, CALLS, ROWS = 4096, 1e-6, 2000, (1, 16, 64)


def per_call_us(fn) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / CALLS * 1e6)
    return best


def recorded_launches(launcher, args) -> list:
    """The (module, kernel, grid, args, constants, num_warps, num_stages) of each non-empty launch
    one call of `launcher(*args)` makes, recorded by wrapping its module's `_launch`."""
    module = sys.modules[launcher.__module__]
    original, seen = module._launch, []

    def record(kernel, grid, kernel_args, constants, num_warps, num_stages):
        if 0 not in grid:
            seen.append((module, kernel, grid, kernel_args, constants, num_warps, num_stages))
        original(kernel, grid, kernel_args, constants, num_warps, num_stages)

    module._launch = record
    try:
        launcher(*args)
    finally:
        module._launch = original
    torch.cuda.synchronize()
    return seen


def launch_rows(name, launches) -> dict:
    """Timing rows for each recorded launch: Triton's own `kernel[grid](...)`, the module's
    `_launch`, the compiled kernel's `run` and the C function under Triton 3.6's CUDA launcher."""
    rows = {}
    for index, (module, kernel, grid, args, constants, warps, stages) in enumerate(launches):
        tag = f"{name} launch {index}"
        rows[f"{tag}: Triton kernel[grid]"] = lambda k=kernel, g=grid, a=args, c=constants, w=warps, s=stages: \
            k[g](*a, *c, num_warps=w, num_stages=s)
        rows[f"{tag}: _launch"] = lambda m=module, k=kernel, g=grid, a=args, c=constants, w=warps, s=stages: \
            m._launch(k, g, a, c, w, s)
        compiled = kernel[grid](*args, *constants, num_warps=warps, num_stages=stages)
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
        grid3 = (*grid, 1, 1)[:3]
        stream = torch.cuda.current_stream().cuda_stream
        rows[f"{tag}: CompiledKernel.run"] = lambda r=run, g=grid3, f=function, md=metadata, a=args, c=constants: \
            r(g[0], g[1], g[2], stream, f, md, None, None, None, *a, *c)
        c_launch = getattr(run, "launch", None)
        if c_launch is None or getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
            continue
        flags = (run.launch_cooperative_grid, run.launch_pdl, None, None)
        pointers = tuple(a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args)
        for label, passed in (("tensors", args), ("data_ptr ints", pointers)):
            rows[f"{tag}: C launch, {label}"] = lambda r=c_launch, g=grid3, f=function, md=metadata, a=passed, \
                c=constants: r(g[0], g[1], g[2], stream, f, *flags, md, None, None, None, *a, *c)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the table here")
    options = parser.parse_args()
    device = torch.cuda.get_device_name()
    print(f"# {device}, torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    results = {}
    for m in ROWS:
        x = torch.randn(m, N, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        rms = DISPATCHER.select("rms_norm_fwd", x.device, x.dtype, ("M", "N"), (m, N)).launcher
        smx = DISPATCHER.select("softmax_fwd", x.device, x.dtype, ("M", "N"), (m, N)).launcher
        rows = {
            "eager F.rms_norm": lambda: F.rms_norm(x, (N,), w, EPS),
            "eager torch.softmax": lambda: torch.softmax(x, -1),
            "hk.rmsnorm": lambda: hk.rmsnorm(x, w, EPS),
            "hk.softmax": lambda: hk.softmax(x, -1),
            f"rmsnorm launcher {rms.__name__}": lambda: rms(x, w, EPS, x.dtype),
            f"softmax launcher {smx.__name__}": lambda: smx(x, x.dtype),
        }
        rows.update(launch_rows("rmsnorm", recorded_launches(rms, (x, w, EPS))))
        rows.update(launch_rows("softmax", recorded_launches(smx, (x, x.dtype))))
        if m == 1:
            rows.update({
                "alloc torch.empty_like(x)": lambda: torch.empty_like(x),
                "alloc x.new_empty(m, fp32)": lambda: x.new_empty(m, dtype=torch.float32),
                "alloc x.new_empty((0, n), fp32)": lambda: x.new_empty((0, N), dtype=torch.float32),
                "alloc x.new_empty((m, n), bf16)": lambda: x.new_empty((m, N), dtype=torch.bfloat16),
                "x.stride() + x.size()": lambda: (x.stride(), x.size()),
                "x.data_ptr()": x.data_ptr,
                "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
            })
        print(f"## {m}x{N} bf16", flush=True)
        for name, fn in rows.items():
            us = per_call_us(fn)
            results[f"{m}x{N} {name}"] = round(us, 2)
            print(f"{name:52s} {us:8.2f} us/call", flush=True)
        if m == 1:
            for name in (f"rmsnorm launcher {rms.__name__}", f"softmax launcher {smx.__name__}"):
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(CALLS):
                    rows[name]()
                profile.disable()
                torch.cuda.synchronize()
                print(f"--- cProfile: {name} ({CALLS} calls)")
                pstats.Stats(profile).sort_stats("tottime").print_stats(12)
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"device": device, "torch": torch.__version__, "us_per_call": results}, out, indent=1)


if __name__ == "__main__":
    main()
