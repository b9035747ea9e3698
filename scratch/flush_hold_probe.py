"""Probe: does the GPU-side wait between the report's L2 flush (a 256 MB write) and the timed run
change the kernel's time? The report waits twice the host's enqueue time, so a peer with a slower
host path (Liger's autograd.Function) waits longer than ours; if L2 writes its dirty lines back
while the GPU waits, the longer wait leaves the kernel fewer dirty lines to write back. Times ours
and Liger (public APIs) and a copy of the same bytes at several waits, alternating; median µs."""
import statistics
import sys

import torch

sys.path.insert(0, ".")
import helion_kernels as hk
from benchmarks.timing import SLEEP_CYCLES_PER_S, Timer
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.softmax import LigerSoftmaxFunction

HOLDS_US = (0, 10, 50, 200, 1000)
REPS, ROUNDS = 20, 5
timer = Timer(torch.device("cuda"))
x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
src = torch.empty(2 * x.numel(), device="cuda", dtype=torch.bfloat16)[: x.numel()]
dst = torch.empty_like(src)
fns = {
    "rmsnorm ours": lambda: hk.rms_norm(x, (4096,), w, 1e-6),
    "rmsnorm liger": lambda: LigerRMSNormFunction.apply(x, w, 1e-6),
    "softmax ours": lambda: hk.softmax(x, -1),
    "softmax liger": lambda: LigerSoftmaxFunction.apply(x),
    "copy 256 MB": lambda: dst.copy_(src),
}
for fn in fns.values():
    for _ in range(5):
        fn()
times = {(name, hold): [] for name in fns for hold in HOLDS_US}
for round_index in range(ROUNDS):
    order = list(times) if round_index % 2 == 0 else list(reversed(times))
    for name, hold in order:
        times[(name, hold)].extend(timer._timed_runs(fns[name], REPS, int(hold * 1e-6 * SLEEP_CYCLES_PER_S)))
for name in fns:
    print(name, "  ".join(f"wait {hold} µs: {statistics.median(times[(name, hold)]):.2f}" for hold in HOLDS_US), flush=True)
