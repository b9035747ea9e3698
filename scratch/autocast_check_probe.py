"""Host time per decode-size call of the public API with its autocast check and with the check
replaced by a trivial C call (`bool()`, False): what the fifty-first session's check costs.
Paired rounds, 2000 back-to-back calls between synchronizes, median of 15 rounds, on the GPU."""
import json
import os
import statistics
import sys
import time

import torch

import helion_kernels as hk
from helion_kernels import _autocast

CHECK = _autocast.enabled


def host_us(fn, calls=2000):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    dev = "cuda"
    x1 = torch.randn(1, 4096, device=dev, dtype=torch.bfloat16)
    x64 = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    wm = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    cases = {"rmsnorm 1x4096": lambda: hk.rmsnorm(x1, w, 1e-6), "rmsnorm 64x4096": lambda: hk.rmsnorm(x64, w, 1e-6),
             "softmax 1x4096": lambda: hk.softmax(x1, -1), "linear 1x4096x4096": lambda: hk.linear(x1, wm)}
    for fn in cases.values():
        for _ in range(50):
            fn()
    rounds = {name: {"with check": [], "without": []} for name in cases}
    for _ in range(15):
        for name, fn in cases.items():
            _autocast.enabled = CHECK
            rounds[name]["with check"].append(host_us(fn))
            _autocast.enabled = bool
            rounds[name]["without"].append(host_us(fn))
    _autocast.enabled = CHECK
    loops = 1_000_000
    start = time.perf_counter()
    for _ in range(loops):
        CHECK()
    check_ns = (time.perf_counter() - start) / loops * 1e9
    out = {"device": torch.cuda.get_device_name(), "check_call_ns": check_ns,
           "cases": {n: {k: statistics.median(v) for k, v in r.items()} for n, r in rounds.items()}}
    for n, r in out["cases"].items():
        print(f"{n}: with check {r['with check']:.3f} us, without {r['without']:.3f} us, "
              f"delta {r['with check'] - r['without']:+.3f} us")
    print(f"the check alone: {check_ns:.1f} ns a call")
    path = os.path.join(os.environ.get("OUT", "."), "autocast_check_probe.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
