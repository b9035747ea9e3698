"""`python -m benchmarks.overhead_probe --out DIR [--old DIR]`: per-call cost of decode-sized calls.

For rmsnorm and softmax (bfloat16, N=4096, M = 1, 8, 64) and matmul / linear (bfloat16, M=1,
K=N=4096) it times PyTorch eager, the generated launcher the dispatcher selects (this checkout's,
"launcher", and the same variant from the `_generated` folder given by --old, "old launcher") and
the public API: the host time per call (1000 back-to-back calls between two synchronizes, median
of 5 loops) and the GPU-event median (L2 flushed before each call). It then checks the fast paths
against eager (a misaligned input, a side stream, a launch hook) and counts what was cached. Writes
DIR/overhead.json and DIR/overhead.md (also printed).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton

import helion_kernels as hk
from helion_kernels._dispatch import DISPATCHER
from helion_kernels._generated import matmul as gen_matmul, rms_norm as gen_rms_norm, softmax as gen_softmax

from .timing import Timer

EPS = 1e-6
N = 4096
FAMILY_MODULE = {"rms_norm_fwd": "rms_norm", "softmax_fwd": "softmax", "matmul": "matmul", "linear": "matmul"}


def _cases(device):
    """(name, M, dispatch op, dispatch sizes, launcher args, eager, api) per measured call."""
    bf16 = dict(device=device, dtype=torch.bfloat16)
    cases = []
    for m in (1, 8, 64):
        x, w = torch.randn(m, N, **bf16), torch.randn(N, **bf16)
        cases.append(("rmsnorm", m, "rms_norm_fwd", (m, N), (x, w, EPS, x.dtype),
                      lambda x=x, w=w: F.rms_norm(x, (N,), w, EPS), lambda x=x, w=w: hk.rmsnorm(x, w, EPS)))
        cases.append(("softmax", m, "softmax_fwd", (m, N), (x, x.dtype),
                      lambda x=x: torch.softmax(x, -1), lambda x=x: hk.softmax(x, -1)))
    x, w, b = torch.randn(1, N, **bf16), torch.randn(N, N, **bf16) / 64, torch.randn(N, **bf16)
    cases.append(("matmul", 1, "matmul", (1, N, N), (x, w), lambda: torch.matmul(x, w), lambda: hk.matmul(x, w)))
    cases.append(("linear", 1, "matmul", (1, N, N), (x, w.t()), lambda: F.linear(x, w), lambda: hk.linear(x, w)))
    cases.append(("linear+bias", 1, "linear", (1, N, N), (x, w, b),
                  lambda: F.linear(x, w, b), lambda: hk.linear(x, w, b)))
    return cases


def _old_modules(folder: Path | None) -> dict:
    modules = {}
    for name in sorted(set(FAMILY_MODULE.values())) if folder else ():
        spec = importlib.util.spec_from_file_location(f"_old_generated_{name}", folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[name] = module
    return modules


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _guarded(records, what, fn):
    try:
        return fn()
    except Exception as error:  # noqa: BLE001  (recorded, the probe goes on)
        records.append({"check": what, "ok": False, "detail": f"{type(error).__name__}: {error}"[:300]})
        return None


def measure(timer: Timer, old: dict) -> tuple:
    rows, checks = [], []
    for name, m, op, sizes, args, eager, api in _cases(timer.device):
        x = args[0]
        decision = DISPATCHER.select(op, x.device, x.dtype, ("M", "N", "K")[:len(sizes)], sizes)
        impls = {"eager": eager, "api": api}
        if decision.launcher is not None:
            impls["launcher"] = lambda launcher=decision.launcher, args=args: launcher(*args)
            module = old.get(FAMILY_MODULE[op])
            old_launcher = module.VARIANTS.get(op, {}).get(decision.variant) if module else None
            if old_launcher is not None:
                impls["old launcher"] = lambda launcher=old_launcher, args=args: launcher(*args)
        expected = eager().float()
        for impl, fn in impls.items():
            got = _guarded(checks, f"{name} M={m} {impl} runs", lambda fn=fn: _first(fn()).float())
            if got is None:
                continue
            if impl != "eager":
                close = torch.allclose(got, expected, rtol=3e-2, atol=3e-2)
                checks.append({"check": f"{name} M={m} {impl} matches eager", "ok": bool(close)})
            host = _guarded(checks, f"{name} M={m} {impl} host", lambda fn=fn: timer.host_us(fn))
            gpu = _guarded(checks, f"{name} M={m} {impl} gpu", lambda fn=fn: timer.device_us(fn))
            rows.append({"case": name, "M": m, "impl": impl, "host_us": host, "gpu_us": gpu,
                         "variant": f"{op}__{decision.variant}" if impl != "eager" else ""})
            print(rows[-1], flush=True)
    return rows, checks


def fast_path_checks(device) -> list:
    checks = []
    bf16 = dict(device=device, dtype=torch.bfloat16)
    w = torch.randn(N, **bf16)
    misaligned = torch.randn(8 * N + 1, **bf16)[1:].view(8, N)
    for _ in range(3):
        got = hk.rmsnorm(misaligned, w, EPS)
    checks.append({"check": "misaligned input (api, repeated)",
                   "ok": bool(torch.allclose(got.float(), F.rms_norm(misaligned, (N,), w, EPS).float(), 3e-2, 3e-2))})
    x = torch.randn(8, N, **bf16)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        got = [hk.softmax(x, -1) for _ in range(3)][-1]
    side.synchronize()
    checks.append({"check": "side stream (api, repeated)",
                   "ok": bool(torch.allclose(got.float(), torch.softmax(x, -1).float(), 3e-2, 3e-2))})
    seen = []

    def hook(metadata):
        seen.append(metadata.get()["name"])

    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        got = hk.softmax(x, -1)
        torch.cuda.synchronize(device)
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    checks.append({"check": "launch hook sees the launch", "ok": bool(seen), "detail": str(seen[:1])})
    cached = {module.__name__.rsplit(".", 1)[-1]: sum(len(state[1]) for state in module._LAUNCHES.values() if state[1])
              for module in (gen_rms_norm, gen_softmax, gen_matmul)}
    checks.append({"check": "compiled launches cached per module", "ok": all(cached.values()), "detail": str(cached)})
    checks.append({"check": "direct-call plans", "ok": bool(DISPATCHER.plans), "detail": str(len(DISPATCHER.plans))})
    return checks


def render(rows: list, checks: list, header: str) -> str:
    lines = [header, "", "| case | M | impl | host µs/call | GPU-event median µs | variant |", "|---|---:|---|---:|---:|---|"]
    for r in rows:
        host = f"{r['host_us']:.2f}" if r["host_us"] is not None else "failed"
        gpu = f"{r['gpu_us']:.2f}" if r["gpu_us"] is not None else "failed"
        lines.append(f"| {r['case']} | {r['M']} | {r['impl']} | {host} | {gpu} | {r['variant']} |")
    lines += ["", "| check | ok | detail |", "|---|---|---|"]
    lines += [f"| {c['check']} | {c['ok']} | {c.get('detail', '')} |" for c in checks]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--old", type=Path, help="an older helion_kernels/_generated folder to compare with")
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    timer = Timer(device)
    start = time.time()
    rows, checks = measure(timer, _old_modules(args.old))
    checks += fast_path_checks(device)
    header = (f"{torch.cuda.get_device_name(device)}, torch {torch.__version__}, triton {triton.__version__}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {time.time() - start:.0f} s")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "overhead.json").write_text(json.dumps({"header": header, "rows": rows, "checks": checks}, indent=1))
    text = render(rows, checks, header)
    (args.out / "overhead.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
