"""Where a fresh process's first call of an op goes (GPU; the report's first-call probe, profiled).

    PYTHONPATH=. python3 scratch/first_call_profile.py FAMILY OUT_PREFIX

Creates its input (so the CUDA context exists), then times and profiles (cProfile) the first and
the second call of hk.<op>, and the phases of the first: the registry's import of the generated
modules, the dispatcher's decision, and the launch. Run it twice with one TRITON_CACHE_DIR: the
second run is the warm-cache first call of the report. Writes OUT_PREFIX.txt (top functions by
cumulative and by own time) and prints a JSON line of the phase times.
"""
from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import time

start = time.perf_counter()
import torch  # noqa: E402

import helion_kernels as hk  # noqa: E402

imported = time.perf_counter()
family, prefix = sys.argv[1], sys.argv[2]
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
q = torch.randn(1, 8, 4096, 128, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
call = {"rmsnorm": lambda: hk.rmsnorm(x, x[0], 1e-6), "softmax": lambda: hk.softmax(x, -1),
        "matmul": lambda: hk.matmul(x, x),
        "attention": lambda: hk.scaled_dot_product_attention(q, q, q, is_causal=True)}[family]
phases = {"import_s": imported - start}
from helion_kernels._dispatch import DISPATCHER  # noqa: E402

profile = cProfile.Profile()
begin = time.perf_counter()
profile.enable()
DISPATCHER.registry.ops()  # imports the generated modules
phases["registry_ms"] = (time.perf_counter() - begin) * 1e3
import triton  # noqa: E402

mark = time.perf_counter()
triton.runtime.driver.active.get_current_device()
phases["triton_driver_ms"] = (time.perf_counter() - mark) * 1e3
mark = time.perf_counter()
call()
torch.cuda.synchronize()
profile.disable()
phases["first_call_ms"] = (time.perf_counter() - mark) * 1e3
phases["total_first_ms"] = (time.perf_counter() - begin) * 1e3
mark = time.perf_counter()
call()
torch.cuda.synchronize()
phases["second_call_ms"] = (time.perf_counter() - mark) * 1e3
text = io.StringIO()
stats = pstats.Stats(profile, stream=text)
stats.sort_stats("cumulative").print_stats(45)
stats.sort_stats("tottime").print_stats(30)
with open(prefix + ".txt", "w") as f:
    f.write(json.dumps(phases) + "\n" + text.getvalue())
print(json.dumps(phases))
