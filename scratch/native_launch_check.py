"""Which launch path the softmax module's first call takes on this GPU (the native launch, or
Triton's runner and why): tests/runtime/test_native_launch.py's repeated-launch case.

    python3 scratch/native_launch_check.py
"""
import torch

import helion_kernels as hk
from helion_kernels._generated import softmax as generated


def main() -> None:
    x = torch.randn(7, 3001, device="cuda", dtype=torch.bfloat16)
    hk.softmax(x, -1)
    print("launch:", generated._launch, "native:", generated._native, "replay:", generated._replay)
    for kernel, launches in generated._LAUNCHES.values():
        print("kernel", getattr(kernel, "__name__", kernel), "used globals:", dict(getattr(kernel, "used_global_vals", {})))
        for entry in (launches or {}).values():
            print("   entry", type(entry).__name__)
        for cache in kernel.device_caches.values():
            for compiled in cache[0].values():
                run = compiled.run
                print("   compiled", compiled.packed_metadata, list(compiled.src.signature.values()),
                      "scratch", run.global_scratch_size, run.profile_scratch_size, "pdl", run.launch_pdl,
                      "coop", run.launch_cooperative_grid, type(run).__name__, "C layout", generated._C_LAUNCH_LAYOUT)


if __name__ == "__main__":
    main()
