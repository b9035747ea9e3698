"""Measurements other than the op cases: the device ceilings, per-call dispatch overhead, and the
first-call time of each op in fresh processes (cold and warm Triton cache)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels._dispatch import DISPATCHER

from .impls import EPS

REPO = Path(__file__).resolve().parent.parent
DISPATCH_ROUNDS = 15


def copy_us(timer, nbytes: int) -> float:
    """Device time of a device-to-device copy of `nbytes` (it reads and writes that many bytes)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=timer.device).random_()
    dst = torch.empty_like(src)
    return timer.device_us(lambda: dst.copy_(src))


def _matmul_us(timer, n: int) -> float:
    a = torch.randn(n, n, device=timer.device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=timer.device, dtype=torch.bfloat16)
    return timer.device_us(lambda: torch.matmul(a, b))


def ceilings(timer, tiny: bool) -> dict:
    """Copy bandwidth (bytes read + written by a large device-to-device copy) and cuBLAS bf16 TFLOP/s at 4096³."""
    nbytes = (4 << 20) if tiny else (1 << 30)
    n = 128 if tiny else 4096
    return {"copy_GBps": 2 * nbytes / copy_us(timer, nbytes) / 1e3, "copy_bytes": nbytes,
            "cublas_TFLOPs": 2 * n ** 3 / _matmul_us(timer, n) / 1e6, "cublas_n": n}


def dispatch(timer, shape: dict) -> list:
    """Per-call host time of the public API against the generated launcher the dispatcher selected
    (same arguments), and PyTorch eager, for rmsnorm and softmax at a decode-sized shape."""
    x = torch.randn(shape["M"], shape["N"], device=timer.device, dtype=torch.bfloat16)
    w = torch.randn(shape["N"], device=timer.device, dtype=torch.bfloat16)
    cases = {
        "rmsnorm": ("rms_norm_fwd", (x, w, EPS, x.dtype), lambda: hk.rmsnorm(x, w, EPS),
                    lambda: F.rms_norm(x, (shape["N"],), w, EPS)),
        "softmax": ("softmax_fwd", (x, x.dtype), lambda: hk.softmax(x, -1), lambda: torch.softmax(x, -1)),
    }
    records = []
    for family, (op, args, api, eager) in cases.items():
        decision = DISPATCHER.select(op, x.device, x.dtype, ("M", "N"), tuple(x.shape))
        if decision.launcher is None:
            raise RuntimeError(f"no generated variant for {op}: {decision.reason}")
        launcher = decision.launcher
        note = f"{op}__{decision.variant}"
        rounds = timer.host_rounds({"api": api, "launcher": lambda: launcher(*args), "eager": eager},
                                   rounds=DISPATCH_ROUNDS)
        # the overhead is the median of each round's difference: the api's and the launcher's loops
        # of one round run back to back, while the medians of each may come from different rounds
        overhead = statistics.median(a - b for a, b in zip(rounds["api"], rounds["launcher"]))
        for impl, times in rounds.items():
            record = {"op": f"dispatch_{family}", "shape": shape, "mode": "host", "impl": impl,
                      "status": "ok", "us": statistics.median(times), "note": note if impl == "launcher" else ""}
            if impl == "api":
                record["overhead_us"] = overhead
            records.append(record)
    return records


FIRST_CALL = r"""
import json, sys, time
start = time.perf_counter()
import torch
import helion_kernels as hk
imported = time.perf_counter()
family, device, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = torch.randn(size, size, device=device, dtype=torch.bfloat16)
q = torch.randn(1, 8, size, min(size, 128), device=device, dtype=torch.bfloat16)
call = {"rmsnorm": lambda: hk.rmsnorm(x, x[0], 1e-6), "softmax": lambda: hk.softmax(x, -1),
        "matmul": lambda: hk.matmul(x, x),
        "attention": lambda: hk.scaled_dot_product_attention(q, q, q, is_causal=True)}[family]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
times = []
for _ in range(2):
    sync()
    begin = time.perf_counter()
    call()
    sync()
    times.append(time.perf_counter() - begin)
print(json.dumps({"import_s": imported - start, "first_ms": times[0] * 1e3, "second_ms": times[1] * 1e3}))
"""

FIRST_CALL_OPS = ("rmsnorm", "softmax", "matmul", "attention")


def _spawn(family: str, device: str, size: int, cache: str):
    env = {**os.environ, "TRITON_CACHE_DIR": cache}
    return subprocess.Popen([sys.executable, "-c", FIRST_CALL, family, device, str(size)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _collect(proc, end: float) -> dict:
    timeout = max(1.0, end - time.monotonic())
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"status": f"failed: timeout after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"status": f"failed: exit {proc.returncode}: {err.strip().splitlines()[-1:]}"}
    return {"status": "ok", **json.loads(out.strip().splitlines()[-1])}


def first_calls(device: str, tiny: bool, timeout: float) -> list:
    """First-call time of each op in fresh `python -c` processes: with an empty Triton cache (cold,
    compiles the kernel), then again with the cache that run filled (warm). The processes of one
    round run side by side; each reports its import time and its first and second call. Each round
    gets `timeout` seconds."""
    size = 32 if tiny else 4096
    records = []
    with tempfile.TemporaryDirectory() as root:
        caches = {f: str(Path(root) / f) for f in FIRST_CALL_OPS}
        for cache_state in ("cold", "warm"):
            procs = {f: _spawn(f, device, size, caches[f]) for f in FIRST_CALL_OPS}
            end = time.monotonic() + timeout
            for family, proc in procs.items():
                records.append({"op": "first_call", "impl": family, "shape": {"size": size},
                                "mode": cache_state, **_collect(proc, end)})
    return records
