"""What the dynamic twins of static_reduction_sizes variants cost and save (GPU; writes $OUT/static_twin_probe.json).

1. First-call times in this fresh process (its own empty Triton cache) of the bf16 softmax backward
   at 2048 rows and twelve widths near the tuned 32000: through the dispatcher (the static variant
   at 32000, its twin elsewhere), and with the static variant forced at every width, as before twins.
2. Steady kernel times (the report's timer, alternating rounds) at 32000 and 32768 columns: the
   static variant and the entry's dynamic twin (its dynamic_config, the config before static sizes).
Run: PYTHONPATH=. TRITON_CACHE_DIR=$(mktemp -d) python3 scratch/static_twin_probe.py
"""
from __future__ import annotations

import json
import os
import statistics
import time

import torch

from benchmarks.timing import Timer
from helion_kernels._dispatch import DISPATCHER
import kernels_src

OP, DTYPE, ROWS, TUNED = "softmax_bwd", torch.bfloat16, 2048, 32000
WIDTHS = [32000, 31999, 32001, 31744, 32256, 30000, 32768, 33000, 29000, 32100, 31900, 32500]


def first_call_ms(launcher, args) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    launcher(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    device = torch.device("cuda")
    spec = next(s for s in kernels_src.ALL_OPS if s.name == OP)
    result = {"device": torch.cuda.get_device_name(), "widths": WIDTHS}
    tuned = DISPATCHER.select(OP, device, DTYPE, ("M", "N"), (ROWS, TUNED))
    static = tuned.launcher
    untuned = DISPATCHER.select(OP, device, DTYPE, ("M", "N"), (ROWS, TUNED + 1))
    twin_id, twin = untuned.variant, untuned.launcher
    result["static_variant"], result["twin_variant"] = tuned.variant, twin_id
    inputs = {n: spec.make_inputs({"M": ROWS, "N": n}, DTYPE, device, 0) for n in WIDTHS}
    # dispatcher first (static at 32000, twin elsewhere), then the static variant forced everywhere
    chosen, dispatched_ms = [], []
    for n in WIDTHS:
        decision = DISPATCHER.select(OP, device, DTYPE, ("M", "N"), (ROWS, n))
        chosen.append(decision.variant)
        dispatched_ms.append(first_call_ms(decision.launcher, inputs[n]))
    forced_ms = [first_call_ms(static, inputs[n]) for n in WIDTHS]
    result.update(chosen=chosen, dispatched_first_call_ms=dispatched_ms, forced_static_first_call_ms=forced_ms)
    for n in WIDTHS:  # both are right at every width
        expected = spec.reference(*inputs[n])
        for name, fn in (("static", static), ("twin", twin)):
            got = fn(*inputs[n]).double()
            torch.testing.assert_close(got, expected, rtol=1e-2, atol=1e-7, msg=f"{name} at {n}")
    timer = Timer(device)
    for n in (TUNED, 32768):
        args = inputs[n]
        rounds = timer.device_rounds({"static": lambda: static(*args), "twin": lambda: twin(*args)}, rounds=7)
        result[f"us_{n}"] = {name: statistics.median(v) for name, v in rounds.items()}
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "static_twin_probe.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
