"""Probe: what a direct call pays for the native replay's plan order. A tag's plans (every shape
of one public function shares its tag, helion_kernels/_direct) are matched oldest first, so a
shape recorded after many others walks their plans on every call. This times, in one process,
per-call host time (benchmarks.timing.Timer.host_rounds: loops of 1000 calls ended by a
synchronize, alternating rounds) of `hk.softmax` on a shape recorded first and on one recorded
after OTHERS other shapes, with eager softmax on each as the reference, and checks that both
calls replay (the tag's plan count, and the output against eager).
Run: python3 scratch/replay_scan_probe.py  (writes $OUT/replay_scan_probe.json)"""
import json
import os
import statistics
import sys

sys.path.insert(0, ".")
import torch

import helion_kernels as hk
from helion_kernels import _direct
from benchmarks.timing import Timer

OTHERS = 48
N = 4096


def recorded(x):
    """Call hk.softmax on x until its calls replay (the first records), return its output."""
    for _ in range(_direct.RECORDINGS_PER_KEY + 2):
        out = hk.softmax(x, -1)
    return out


def main():
    device = torch.device("cuda")
    timer = Timer(device)
    first = torch.randn(64, 1, N, device=device, dtype=torch.bfloat16)
    recorded(first)
    result = {"device": torch.cuda.get_device_name(), "others": OTHERS}
    alone = timer.host_rounds({"ours first": lambda: hk.softmax(first, -1),
                               "eager first": lambda: torch.softmax(first, -1)}, rounds=11)
    result["before others"] = {k: statistics.median(v) for k, v in alone.items()}
    for m in range(1, OTHERS + 1):
        recorded(torch.randn(m + 100, N, device=device, dtype=torch.bfloat16))
    late = torch.randn(64, 1, N + 8, device=device, dtype=torch.bfloat16)
    out = recorded(late)
    result["max_abs_err_late"] = (out.float() - torch.softmax(late.float(), -1)).abs().max().item()
    result["plans per tag"] = {repr(k): len(v) for k, v in _direct.REPLAYS.items()}
    result["replay bound"] = _direct.replay is not _direct._no_replay
    rounds = timer.host_rounds({"ours first": lambda: hk.softmax(first, -1),
                                "ours late": lambda: hk.softmax(late, -1),
                                "eager first": lambda: torch.softmax(first, -1),
                                "eager late": lambda: torch.softmax(late, -1)}, rounds=11)
    result["after others"] = {k: statistics.median(v) for k, v in rounds.items()}
    diffs = [a - b - (c - d) for a, b, c, d in zip(rounds["ours late"], rounds["ours first"],
                                                   rounds["eager late"], rounds["eager first"])]
    result["late minus first, less eager's (median of rounds, µs)"] = statistics.median(diffs)
    print(json.dumps(result, indent=1))
    with open(os.path.join(os.environ.get("OUT", "."), "replay_scan_probe.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
