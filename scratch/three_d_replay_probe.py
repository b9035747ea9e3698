"""Probe: per-call host time of decode-size calls on 3-D activations ([B, 1, H], as a model's decode
step passes them), with the native replay on (this commit: a plan that views its input's rows and
its output back is replayed) and off (every call through the Python direct path, as before),
against eager PyTorch; Timer.host_rounds, all three in the same alternating rounds."""
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
import helion_kernels as hk
from helion_kernels import _direct
from benchmarks.timing import Timer

timer = Timer(torch.device("cuda"))
replay = None


def with_replay(on, fn):
    def call():
        _direct.replay = replay if on else _direct._no_replay
        return fn()
    return call


BF16 = dict(device="cuda", dtype=torch.bfloat16)
for batch in (1, 16, 64):
    x = torch.randn(batch, 1, 4096, **BF16)
    w = torch.randn(4096, **BF16)
    logits = torch.randn(batch, 1, 32000, **BF16)
    weight = torch.randn(4096, 4096, **BF16) / 64
    cases = {
        "rmsnorm": (lambda: hk.rmsnorm(x, w, 1e-6), lambda: F.rms_norm(x, (4096,), w, 1e-6)),
        "softmax": (lambda: hk.softmax(logits, -1), lambda: torch.softmax(logits, -1)),
        "linear": (lambda: hk.linear(x, weight), lambda: F.linear(x, weight)),
    }
    for name, (ours, eager) in cases.items():
        for _ in range(4):
            ours()
        replay = _direct.replay
        assert replay is not _direct._no_replay, "no replay bound"
        rounds = timer.host_rounds({"replay": with_replay(True, ours), "python": with_replay(False, ours),
                                    "eager": eager}, rounds=11)
        _direct.replay = replay
        med = {k: statistics.median(v) for k, v in rounds.items()}
        print(f"{name} [{batch}, 1, ...]: replay {med['replay']:.2f} µs, python path {med['python']:.2f} µs, "
              f"eager {med['eager']:.2f} µs (eager/replay {med['eager'] / med['replay']:.2f}x, "
              f"eager/python {med['eager'] / med['python']:.2f}x)", flush=True)
