"""Where a decode-sized call spends its host time (GPU only): cProfile of back-to-back calls of the
selected rmsnorm/softmax launchers and the API, plus the cost of each allocation and of the bare
compiled-kernel launch. Prints a table; `python tools/launch_profile.py`."""
import cProfile
import pstats
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
import helion_kernels as hk  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402

N, EPS, CALLS = 4096, 1e-6, 2000


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


x = torch.randn(1, N, device="cuda", dtype=torch.bfloat16)
w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
rms = DISPATCHER.select("rms_norm_fwd", x.device, x.dtype, ("M", "N"), (1, N)).launcher
smx = DISPATCHER.select("softmax_fwd", x.device, x.dtype, ("M", "N"), (1, N)).launcher
rows = {
    "torch.empty_like": lambda: torch.empty_like(x),
    "x.new_empty(m, fp32)": lambda: x.new_empty(1, dtype=torch.float32),
    "x.stride()+size()": lambda: (x.stride(), x.size()),
    "x.data_ptr()": x.data_ptr,
    "eager rms_norm": lambda: F.rms_norm(x, (N,), w, EPS),
    "eager softmax": lambda: torch.softmax(x, -1),
    "rmsnorm launcher": lambda: rms(x, w, EPS),
    "softmax launcher": lambda: smx(x, x.dtype),
    "hk.rmsnorm": lambda: hk.rmsnorm(x, w, EPS),
    "hk.softmax": lambda: hk.softmax(x, -1),
}
for name, fn in rows.items():
    print(f"{name:24s} {per_call_us(fn):8.2f} us/call", flush=True)
for name in ("rmsnorm launcher", "hk.rmsnorm"):
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(CALLS):
        rows[name]()
    profile.disable()
    torch.cuda.synchronize()
    print(f"--- cProfile: {name} ({CALLS} calls)")
    pstats.Stats(profile).sort_stats("tottime").print_stats(18)
