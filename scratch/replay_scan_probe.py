"""Probe: what a direct call pays for the native replay's plan scan. Every shape of one public
function shares its tag (helion_kernels/_direct) and a call walks the tag's plans until one
matches; the replay moves the plan it runs to the front, so a shape in use is found after only
the shapes used since. Two tags run the same kernel: `hk.softmax(x, -1)` and `hk.softmax(x, 1)` on
2-D inputs. Tag -1 records OTHERS other shapes, then the shape S; tag 1 records only S. Timed in
one process (benchmarks.timing.Timer.host_rounds: loops of 1000 calls ended by a synchronize,
alternating rounds):
- S through each tag: the same work, S's plan at the front of either tag once it ran, so the
  difference should be nil;
- `_direct.replay` of a shape neither tag recorded, through each tag: a miss walks every plan, so
  the difference is what walking OTHERS plans costs, which a shape recorded last paid on every
  call when plans were matched oldest first.
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


def recorded(x, dim):
    """Call hk.softmax(x, dim) until its calls replay (the first records), return its output."""
    for _ in range(_direct.RECORDINGS_PER_KEY + 2):
        out = hk.softmax(x, dim)
    return out


def main():
    device = torch.device("cuda")
    timer = Timer(device)
    s = torch.randn(64, N, device=device, dtype=torch.bfloat16)
    unrecorded = torch.randn(63, N, device=device, dtype=torch.bfloat16)
    for m in range(OTHERS):
        recorded(torch.randn(m + 100, N, device=device, dtype=torch.bfloat16), -1)
    errors = [(recorded(s, dim).float() - torch.softmax(s.float(), -1)).abs().max().item() for dim in (-1, 1)]
    long_tag, short_tag = (hk.softmax, -1, None), (hk.softmax, 1, None)
    result = {"device": torch.cuda.get_device_name(), "others": OTHERS, "max_abs_err": errors,
              "plans per tag": {str(tag[1]): len(_direct.REPLAYS[tag]) for tag in (long_tag, short_tag)},
              "replay bound": _direct.replay is not _direct._no_replay,
              "misses are MISSING": all(_direct.replay(tag, unrecorded) is _direct.MISSING
                                        for tag in (long_tag, short_tag))}
    rounds = timer.host_rounds({"S, tag -1": lambda: hk.softmax(s, -1),
                                "S, tag 1": lambda: hk.softmax(s, 1),
                                "miss, tag -1": lambda: _direct.replay(long_tag, unrecorded),
                                "miss, tag 1": lambda: _direct.replay(short_tag, unrecorded),
                                "eager": lambda: torch.softmax(s, -1)}, rounds=11)
    result["per call, median of rounds (µs)"] = {k: statistics.median(v) for k, v in rounds.items()}
    for name, (a, b) in {"S: tag -1 minus tag 1": ("S, tag -1", "S, tag 1"),
                         "miss: tag -1 minus tag 1": ("miss, tag -1", "miss, tag 1")}.items():
        result[name + " (median of rounds, µs)"] = statistics.median(x - y for x, y in zip(rounds[a], rounds[b]))
    print(json.dumps(result, indent=1))
    with open(os.path.join(os.environ.get("OUT", "."), "replay_scan_probe.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
