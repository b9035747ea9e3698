"""Probe the memory-bound kernels (RMSNorm, softmax) under chosen configs against eager/torch.compile.

    python -m benchmarks.membound_probe --out DIR [--only rms_norm_bwd,...] [--budget-s 200]
    python -m benchmarks.membound_probe --cross [--only ...]      # CPU: sm_90 registers/spills only

On a GPU, every (op, shape) case times each listed config of our kernel (its overrides merged into
the kernel's default config), the eager PyTorch peer and, for the cases marked so, torch.compile of
that peer, all bf16 in one process: median of CUDA events with L2 flushed (benchmarks.timing).
Each config's outputs are checked against the float64 reference first. Rows print as they finish
(µs, GB/s from the op's cost model, % of the 4247 GB/s copy ceiling measured on the H200) and are
appended to DIR/probe.jsonl. Before timing, the kernels of all configs are compiled for sm_90 in a
process pool (build_tools.cross_compile) so that the timing loop finds them in Triton's disk cache.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time

import torch

COPY_GBPS = 4247.0
DTYPE = torch.bfloat16


def _c(**overrides) -> dict:
    return overrides


SPLIT_FWD = dict(split_columns=True, reduction_loops=[16])
ROWS_BWD = dict(split_columns=False)
PERSISTENT = dict(pid_type="persistent_interleaved")
TMA_ROWS_FWD = dict(indexing=["pointer", "pointer", "tensor_descriptor", "pointer", "tensor_descriptor", "pointer"])


def _rows_bwd(p, r, w, **extra):
    """rms_norm_bwd, whole rows: dW partials p, rows per step r, warps w (column tile 4096 unused but
    lifting the DSL's warps cap, which counts only the discovered split-columns blocks)."""
    return (f"p{p} r{r} w{w}" + "".join(f" {k}" for k in extra), _c(**ROWS_BWD, dweight_partials=p,
                                                                   block_sizes=[r, 4096], num_warps=w, **extra))


def _split_bwd(p, r, bn, w, **extra):
    return (f"split p{p} r{r} n{bn} w{w}" + "".join(f" {k}" for k in extra),
            _c(split_columns=True, dweight_partials=p, block_sizes=[r, bn], num_warps=w, **extra))


def _columns(bn, w, ev="", persistent=False, stages=0, rows=1, fwd=True):
    """softmax fwd (online) / bwd (two passes): column tile bn, warps w, pass-1 eviction ev."""
    label = f"cols n{bn} w{w} ev{ev or '-'}" + (" persistent" if persistent else "") + (f" st{stages}" if stages else "")
    label += f" m{rows}" if rows > 1 else ""
    return label, _c(block_sizes=[bn, rows], num_warps=w, load_eviction_policies=[ev] * (2 if fwd else 4),
                     range_num_stages=[stages, stages], **(PERSISTENT if persistent else {}))


def _split(bn, w):
    """softmax fwd / bwd with rows split across programs, pieces of bn columns, w warps."""
    return f"split n{bn} w{w}", _c(split_rows=True, block_sizes=[bn, 1], num_warps=w)


def _rows(bm, w, fwd=True, indexing=None):
    """softmax fwd / bwd over whole rows (column tile 4096 unused, lifting the DSL's warps cap);
    `indexing` is that of the row load and the store."""
    flag = "online_softmax" if fwd else "two_pass_rows"
    extra = {} if indexing is None else {"indexing": [indexing, indexing] + ["pointer"] * (1 if fwd else 3)}
    return (f"rows m{bm} w{w}" + (f" {indexing}" if indexing else ""),
            _c(**{flag: False}, block_sizes=[4096, bm], num_warps=w, **extra))


# (op, shape, compile peer?, [(label, overrides)]), most important first. Shapes with M=1 are
# timed on the host clock (per-call time of back-to-back calls: launch overhead included).
CASES = [
    ("rms_norm_bwd", (16384, 4096), True, [
        _rows_bwd(p, r, w) for p, r, w in [(264, 1, 8), (264, 1, 16), (528, 1, 8), (1056, 1, 8), (264, 2, 8),
                                           (264, 4, 16), (528, 2, 16), (132, 4, 16), (132, 1, 8), (256, 1, 8),
                                           (528, 1, 16), (1056, 2, 8)]
    ]),
    ("rms_norm_fwd", (16384, 4096), False, [
        ("m1 w8", _c(block_sizes=[1, 1], num_warps=8)),
        ("m1 w8 tma", _c(block_sizes=[1, 1], num_warps=8, **TMA_ROWS_FWD)),
        ("m2 w8 tma", _c(block_sizes=[2, 1], num_warps=8, **TMA_ROWS_FWD)),
        ("m1 w4 tma", _c(block_sizes=[1, 1], num_warps=4, **TMA_ROWS_FWD)),
        ("m1 w8 block_ptr", _c(block_sizes=[1, 1], num_warps=8, indexing=["pointer", "pointer", "block_ptr", "pointer",
                                                                         "block_ptr", "pointer"])),
        ("m4 w16", _c(block_sizes=[4, 1], num_warps=16)),
        ("m2 w8 s1", _c(block_sizes=[2, 1], num_warps=8, num_stages=1)),
    ]),
    ("softmax_fwd", (4096, 131072), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16), _split(2048, 4), _split(2048, 8),
        _columns(4096, 8, "last"), _columns(4096, 8, "last", True), _columns(4096, 16, "last", True),
        _columns(4096, 8, "last", True, 3), _columns(4096, 16, "last", True, 3), _columns(2048, 8, "last", True, 4),
        _columns(4096, 4, "last", True, 3), _columns(4096, 8, "", True), _columns(4096, 16, "last", False, 3),
    ]),
    ("softmax_fwd", (2048, 262144), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16),
        _columns(4096, 8, "last"), _columns(4096, 8, "last", True), _columns(4096, 16, "last", True),
        _columns(4096, 8, "last", True, 3), _columns(4096, 16, "last", True, 3), _columns(4096, 8, "", True, 3),
    ]),
    ("softmax_fwd", (256, 262144), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16),
        _columns(4096, 16), _columns(4096, 16, "last"), _columns(4096, 16, "", True), _columns(4096, 16, "", True, 3),
        _columns(4096, 8, "", False, 3), _columns(4096, 16, "", False, 3),
    ]),
    ("softmax_fwd", (16384, 4096), False, [
        _rows(2, 16), _rows(1, 8), _rows(2, 8),
        _rows(1, 8, indexing="tensor_descriptor"), _rows(2, 16, indexing="tensor_descriptor"),
        _rows(1, 8, indexing="block_ptr"),
        _columns(4096, 8), _columns(4096, 8, "", True),
    ]),
    ("softmax_bwd", (16384, 4096), False, [_rows(1, 16, False), _rows(1, 4, False), _columns(4096, 8, fwd=False)]),
    ("softmax_bwd", (4096, 131072), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16), _split(2048, 8),
        _columns(4096, 16, "last", fwd=False), _columns(4096, 8, "last", True, fwd=False), _columns(4096, 16, "last", True, fwd=False),
        _columns(4096, 8, "last", True, 3, fwd=False), _columns(4096, 16, "last", True, 3, fwd=False), _columns(2048, 16, "last", True, 3, fwd=False),
        _columns(4096, 16, "", True, 3, fwd=False),
    ]),
    ("softmax_bwd", (2048, 262144), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16),
        _columns(4096, 16, "last", fwd=False), _columns(4096, 16, "last", True, fwd=False), _columns(4096, 16, "last", True, 3, fwd=False),
        _columns(4096, 8, "last", True, 3, fwd=False),
    ]),
    ("softmax_bwd", (256, 262144), False, [
        _split(4096, 4), _split(4096, 8), _split(4096, 16),
        _columns(4096, 16, "last", fwd=False), _columns(4096, 16, "", False, 3, fwd=False), _columns(4096, 16, "", True, 3, fwd=False),
        _columns(4096, 32, "", fwd=False),
    ]),
    ("rms_norm_fwd", (64, 262144), True, [
        (f"split m{bm} n{bn} w{w} ev{ev}", _c(**SPLIT_FWD, block_sizes=[bm, bn], num_warps=w,
                                            load_eviction_policies=["last", "", "first"] if ev else ["", "", ""]))
        for bm, bn, w, ev in [(1, 4096, 8, 0), (1, 4096, 8, 1), (1, 4096, 4, 1), (2, 4096, 8, 1), (1, 2048, 8, 1),
                              (2, 4096, 16, 1), (4, 4096, 16, 1)]
    ]),
    ("rms_norm_bwd", (64, 262144), False, [
        _split_bwd(p, r, bn, w) for p, r, bn, w in [(8, 1, 4096, 8), (8, 1, 4096, 16), (16, 1, 4096, 16), (16, 1, 4096, 8),
                                                    (8, 2, 4096, 16), (8, 1, 2048, 4)]
    ]),
    ("rms_norm_bwd", (65536, 4096), False, [
        _rows_bwd(p, r, w) for p, r, w in [(264, 1, 8), (528, 1, 8), (1056, 1, 8), (264, 4, 16), (1056, 2, 8)]
    ]),
    ("rms_norm_bwd", (16384, 8192), False, [
        _rows_bwd(p, r, w) for p, r, w in [(264, 2, 16), (264, 1, 16), (528, 1, 16), (132, 2, 16), (264, 1, 8)]
    ]),
    ("rms_norm_bwd", (16384, 16384), False, [
        _rows_bwd(p, r, w) for p, r, w in [(264, 1, 16), (132, 1, 16), (528, 1, 16), (264, 1, 32)]
    ]),
    ("rms_norm_bwd", (2048, 16384), False, [
        _rows_bwd(p, r, w) for p, r, w in [(132, 1, 16), (264, 1, 16), (512, 1, 16), (1024, 1, 16)]
    ]),
    ("rms_norm_bwd", (4096, 768), False, [
        _rows_bwd(p, r, w) for p, r, w in [(512, 2, 4), (1024, 1, 4), (512, 4, 4), (256, 8, 8), (1056, 2, 4), (512, 4, 8)]
    ]),
    ("rms_norm_fwd", (2048, 16384), False, [
        ("m1 w16", _c(block_sizes=[1, 1], num_warps=16)),
        ("m1 w16 tma", _c(block_sizes=[1, 1], num_warps=16, **TMA_ROWS_FWD)),
        ("m1 loop4096 w8", _c(block_sizes=[1, 1], num_warps=8, reduction_loops=[4096])),
        ("m1 loop8192 w16", _c(block_sizes=[1, 1], num_warps=16, reduction_loops=[8192])),
        ("m1 loop4096 w4", _c(block_sizes=[1, 1], num_warps=4, reduction_loops=[4096])),
    ]),
    ("rms_norm_fwd", (4096, 768), False, [
        (f"m{bm} w{w}", _c(block_sizes=[bm, 1], num_warps=w)) for bm, w in [(1, 2), (2, 2), (1, 4), (4, 4), (1, 1)]
    ]),
    ("softmax_fwd", (2048, 32000), False, [
        _rows(1, 16), _rows(1, 32), _columns(4096, 8), _columns(4096, 8, "", True), _columns(4096, 16, "", True, 3),
        _columns(4096, 8, "last", True, 3),
    ]),
    ("softmax_fwd", (4096, 16384), False, [
        _rows(1, 16), _columns(4096, 8), _columns(4096, 8, "", True), _columns(4096, 16, "", True, 3),
        _columns(4096, 8, "last", True, 3),
    ]),
    ("softmax_bwd", (2048, 32000), False, [
        _rows(1, 32, False), _columns(4096, 8, fwd=False), _columns(4096, 16, "", True, fwd=False), _columns(4096, 16, "", True, 3, fwd=False),
        _columns(4096, 8, "last", True, 3, fwd=False),
    ]),
    ("softmax_bwd", (4096, 16384), False, [
        _rows(1, 32, False), _rows(1, 16, False), _columns(4096, 16, "", True, fwd=False), _columns(4096, 16, "", True, 3, fwd=False),
    ]),
    ("softmax_fwd", (16384, 16384), False, [_rows(1, 16), _split(4096, 4), _split(4096, 8), _split(2048, 4)]),
    ("softmax_fwd", (16384, 4096), False, [_rows(2, 16), _split(4096, 4), _split(2048, 4), _split(1024, 4)]),
    ("rms_norm_fwd", (1, 4096), False, [("m1 w8", _c(block_sizes=[1, 1], num_warps=8))]),
    ("softmax_fwd", (1, 4096), False, [_rows(1, 8), _columns(4096, 8)]),
]


def _spec(name: str):
    import kernels_src

    return next(op for op in kernels_src.ALL_OPS if op.name == name)


def _empty_args(spec, m: int, n: int) -> tuple:
    """The op's arguments as uninitialized CPU tensors of the full shape (dims of the tiny sample
    mapped to M, N): cross-compiling needs only their dtypes, shapes, strides and alignment."""
    sample = spec.make_inputs({"M": 3, "N": 5}, DTYPE, "cpu", 0)
    sizes = {3: m, 5: n}
    return tuple(torch.empty([sizes[d] for d in a.shape], dtype=a.dtype)
                 if isinstance(a, torch.Tensor) else a for a in sample)


def _config(bound, overrides: dict):
    """The default config with `overrides`; a per-site list override names the leading sites
    (the default config fills the rest)."""
    spec = bound.config_spec
    default = spec.default_config()
    merged = {key: list(value) + list(default[key])[len(value):] if isinstance(value, list) and key in default else value
              for key, value in overrides.items()}
    return spec.normalize(default.merged(**merged))


def _selected(only: str | None) -> list:
    """The cases named by `only`: op names, or op:MxN for one shape."""
    names = set(only.split(",")) if only else None
    return [case for case in CASES
            if names is None or case[0] in names or f"{case[0]}:{case[1][0]}x{case[1][1]}" in names]


def _cross_compile_case(case) -> list:
    """[(label, [(kernel, usage or error)])] for one case, compiled for sm_90 on empty CPU tensors."""
    from build_tools.cross_compile import cross_compile

    name, (m, n), _, variants = case
    spec = _spec(name)
    args = _empty_args(spec, m, n)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    rows = []
    for label, overrides in variants:
        try:
            kernels = cross_compile(bound, args, _config(bound, overrides))
            rows.append((label, [(c.name, c.ptxas_info()) for c in kernels]))
        except Exception as error:  # noqa: BLE001 - a failing config is a result to report
            rows.append((label, [("error", f"{type(error).__name__}: {str(error)[:200]}")]))
    return rows


def cross(only: str | None, workers: int) -> None:
    cases = _selected(only)
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        for case, rows in zip(cases, pool.imap(_cross_compile_case, cases)):
            print(f"== {case[0]} {case[1][0]}x{case[1][1]}", flush=True)
            for label, kernels in rows:
                print(f"  {label:32s} " + "; ".join(f"{k}: {u}" for k, u in kernels), flush=True)


def _check(outputs, expected, tolerance) -> str:
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    rtol, atol = tolerance
    for got, want in zip(outputs, expected):
        if not torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol):
            return f"mismatch {(got.double() - want.double()).abs().max().item():.3g}"
    return "ok"


def _row(out, record: dict) -> None:
    print(f"{record['op']:14s} {record['shape']:>12s} {record['impl']:34s} {record.get('us', float('nan')):9.1f} µs "
          f"{record.get('gbps', 0):8.0f} GB/s {record.get('pct', 0):6.1f}%  {record.get('note', '')}", flush=True)
    with open(os.path.join(out, "probe.jsonl"), "a") as fh:
        fh.write(json.dumps(record) + "\n")


def gpu(out: str, only: str | None, budget_s: float, workers: int) -> None:
    from benchmarks.timing import Timer

    start = time.time()
    cases = _selected(only)
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        compiled = pool.map(_cross_compile_case, cases)
    errors = [(c[0], label, k) for c, rows in zip(cases, compiled) for label, ks in rows for k in ks if k[0] == "error"]
    print(f"precompiled in {time.time() - start:.0f} s; errors: {errors}", flush=True)
    device = torch.device("cuda")
    timer = Timer(device, reps=50, seconds=0.15)
    for name, (m, n), with_compile, variants in cases:
        if time.time() - start > budget_s:
            print(f"budget: skipping {name} {m}x{n}", flush=True)
            continue
        spec = _spec(name)
        args = spec.make_inputs({"M": m, "N": n}, DTYPE, "cuda", 0)
        expected = spec.reference(*args)
        flops, moved = spec.cost({"M": m, "N": n}, DTYPE)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        impls = [(label, lambda o=overrides: bound.compile_config(_config(bound, o))) for label, overrides in variants]
        impls.append(("eager", lambda: spec.baseline))
        if with_compile:
            impls.append(("torch.compile", lambda: torch.compile(spec.baseline, dynamic=False)))
        for label, make in impls:
            record = {"op": name, "shape": f"{m}x{n}", "impl": label}
            try:
                fn = make()
                record["note"] = _check(fn(*args), expected, spec.tolerance(DTYPE))
                us = (timer.host_us if m == 1 else timer.device_us)(lambda: fn(*args))
                record.update(us=us, gbps=moved / us / 1e3, pct=100 * moved / us / 1e3 / COPY_GBPS)
            except Exception as error:  # noqa: BLE001 - a failing config is a result to report
                record["note"] = f"failed: {type(error).__name__}: {str(error)[:160]}"
            _row(out, record)
        del args, expected
        torch.cuda.empty_cache()
    print(f"done in {time.time() - start:.0f} s", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.membound_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--only", help="comma-separated op names")
    parser.add_argument("--budget-s", type=float, default=200.0)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--cross", action="store_true", help="compile for sm_90 on the CPU and print registers/spills")
    args = parser.parse_args(argv)
    if args.cross:
        cross(args.only, args.workers)
    else:
        os.makedirs(args.out, exist_ok=True)
        gpu(args.out, args.only, args.budget_s, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
