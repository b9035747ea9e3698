"""Walks the plan under a global time budget. Every implementation runs guarded (a failure becomes
"failed: <reason>", a missing peer "not installed", an exhausted budget "not run (budget)"), and
results.json and RESULTS.md are rewritten after every row; the plots come at the end."""
from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import signal
import statistics
import subprocess
import time
import warnings
from pathlib import Path

import torch
import triton

import helion_kernels as hk

from . import bars, impls, measure, plan, probes, render, resources
from .timing import Timer

DTYPE = torch.bfloat16
IMPL_CAP_S = 60.0          # one implementation on one case (torch.compile included)
MAX_AUTOTUNE_CAP_S = 150.0
# alternating rounds of a row's timings: host mode, one call loop per implementation each round;
# device mode, an equal share of each implementation's CUDA-event runs each round
ROUNDS = {"host": 11, "device": 5}
GRACE_S = 20.0             # an implementation started before the budget ends may run this far past it


class Budget:
    """Seconds left for the run, and a SIGALRM limit around each guarded piece of work."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    @contextlib.contextmanager
    def limit(self, seconds: float):
        def expire(signum, frame):
            raise TimeoutError(f"timeout after {seconds:.0f} s")
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def guarded(budget: Budget, fn, cap: float = IMPL_CAP_S, needs: float = 0.0):
    """(fn(), "ok") or (None, the status saying why not)."""
    if budget.left() <= needs:
        return None, "not run (budget)"
    try:
        with budget.limit(min(cap, budget.left() + GRACE_S)):
            return fn(), "ok"
    except impls.NotInstalled as error:
        return None, str(error)
    except Exception as error:  # noqa: BLE001 - any failure of a peer is a result to report
        message = (str(error).strip().splitlines() or [""])[0][:200]
        return None, f"failed: {type(error).__name__}: {message}"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _commit(repo=probes.REPO) -> str:
    """HK_COMMIT when set (a copied working tree, as on the lent GPU machine, may carry a stale
    .git), else git's HEAD, marked when tracked files differ from it (a stale .git shows so)."""
    if os.environ.get("HK_COMMIT"):
        return os.environ["HK_COMMIT"]

    def git(*args) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=repo, timeout=10).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD") or "unknown"
        changed = head != "unknown" and git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} with uncommitted changes" if changed else head


def environment(device: torch.device, budget_s: float, tiny: bool) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    return {"device": name, "torch": torch.__version__, "triton": triton.__version__,
            "helion_kernels": hk.__version__, "liger_kernel": _version("liger-kernel"),
            "python": platform.python_version(), "commit": _commit(), "dtype": str(DTYPE).removeprefix("torch."),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "budget_s": budget_s, "tiny": tiny}


class Results:
    """Everything measured so far, written to DIR/results.json and DIR/RESULTS.md on every `write`."""

    def __init__(self, out: Path, meta: dict):
        self.out = out
        self.data = {"meta": meta, "ceilings": {}, "records": [], "bars": [], "finished": False}

    def add(self, records):
        self.data["records"].extend(records)

    def write(self, plots: bool = False):
        self.data["bars"] = bars.check(self.data)
        (self.out / "results.json").write_text(json.dumps(self.data, indent=1, default=str))
        if plots:
            self.data["plots"] = render.plots(self.data, self.out)
        (self.out / "RESULTS.md").write_text(render.markdown(self.data))


def _case_records(row, budget: Budget, timer: Timer, ceilings: dict) -> list:
    base = {"op": row.op, "shape": row.shape, "mode": row.mode, "plot": row.plot, **({"dtypes": row.dtypes} if row.dtypes else {})}
    args, status = guarded(budget, lambda: measure.make_inputs(row, DTYPE, timer.device))
    if args is None:
        return [{**base, "impl": impl, "status": status} for impl in row.impls]
    # the same bytes moved by a plain copy: how near a kernel of this size can get to the copy
    # ceiling, which a 1 GiB copy measures (a smaller transfer pays its ramp-up and tail too)
    same_copy_us = None
    if row.mode == "device" and row.family in measure.MEMORY_BOUND:
        moved = measure.cost(row.op, row.shape, DTYPE, row.dtypes)[1]
        same_copy_us, _ = guarded(budget, lambda: probes.copy_us(timer, int(moved) // 2))
    built, statuses = {}, {}
    for impl in row.impls:
        limits = dict(cap=MAX_AUTOTUNE_CAP_S, needs=MAX_AUTOTUNE_CAP_S) if impl == "compile-max-autotune" else {}
        built[impl], statuses[impl] = guarded(budget, lambda: measure.timed_call(row, impl, args), **limits)
    callables = {impl: made[0] for impl, made in built.items() if made is not None}
    times = _times(row, budget, timer, callables, statuses)
    records, ours_out = [], None
    for impl in row.impls:
        record = {**base, "impl": impl, "status": statuses[impl]}
        if impl in times:
            try:
                result = (statistics.median(times[impl]), built[impl][1])
                ours_out = _complete(record, row, result, ceilings, args, ours_out, same_copy_us)
            except Exception as error:  # noqa: BLE001 - a bookkeeping bug must not end the run
                record["status"] = f"failed: after timing: {type(error).__name__}: {error}"[:200]
        records.append(record)
    return records


def _times(row, budget: Budget, timer: Timer, callables: dict, statuses: dict) -> dict:
    """{impl: its times} of the built callables, `statuses` updated with each timing's status.
    Host and device rows time every implementation in the same alternating rounds
    (Timer.host_rounds: call loops; Timer.device_rounds: CUDA-event runs), so that drift between
    implementations (host clock and other processes; GPU clocks and temperature) hits them alike
    and the order they are listed in favours none; graph rows time each implementation's replays
    on its own."""
    if row.mode == "graph":
        times = {}
        for impl, fn in callables.items():
            us, statuses[impl] = guarded(budget, lambda: timer.graph_us(fn))
            if us is not None:
                times[impl] = [us]
        return times
    timing = timer.host_rounds if row.mode == "host" else timer.device_rounds
    times, status = guarded(budget, lambda: timing(callables, rounds=ROUNDS[row.mode]),
                            cap=IMPL_CAP_S * max(1, len(callables))) if callables else ({}, "not run")
    for impl in callables:
        statuses[impl] = status
    return times or {}


def _complete(record: dict, row, result: tuple, ceilings: dict, args: tuple, ours_out, same_copy_us=None):
    """Fill a timed record's rate, % of ceiling (and of a copy of the same bytes, `same_copy_us`),
    and note or difference from ours; returns ours' output."""
    us, first = result
    record["us"] = us
    if row.mode == "device":   # a host-loop time is a per-call cost, not a kernel's bandwidth
        value, unit = measure.rate(row, us, DTYPE)
        ceiling = ceilings.get("copy_GBps" if unit == "GB/s" else "cublas_TFLOPs")
        record.update(rate=value, unit=unit, pct=100 * value / ceiling if ceiling else None)
        if same_copy_us:
            record["pct_same_copy"] = 100 * same_copy_us / us
    if record["impl"] == "ours":
        record["note"] = _describe(row.family, args, row.dtypes)
        if row.mode == "device" and torch.cuda.is_available() and first.is_cuda:
            record["resources"] = resources.describe(measure.timed_call(row, "ours", args)[0])
        return first
    if ours_out is not None and first.shape == ours_out.shape:
        record["max_abs_diff_vs_ours"] = (first.float() - ours_out.float()).abs().max().item()
    return ours_out


def _describe(family: str, args: tuple, dtypes: str = "") -> str:
    try:
        return impls.explain_ours(family, args, dtypes)
    except Exception as error:  # noqa: BLE001 - the explanation is a note, never a reason to fail
        return f"explain failed: {type(error).__name__}: {error}"[:200]


def _report_progress(results: Results, row, records: list, elapsed: float):
    """Rewrite the outputs and print one line; a bug here is printed, never fatal to the run."""
    try:
        results.write()
        statuses = ", ".join(f"{r['impl']} {r['us']:.1f}us" if "us" in r else f"{r['impl']} {r['status'][:60]}"
                             for r in records)
        print(f"[{elapsed:6.1f} s] {row.op} {row.shape} {row.mode}: {statuses}", flush=True)
    except Exception as error:  # noqa: BLE001
        print(f"[{elapsed:6.1f} s] {row.op}: writing the outputs failed: {error!r}", flush=True)


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def run(out: Path, device: torch.device, budget_s: float, tiny: bool, missed: str = "MISSED.md",
        only: list | None = None):
    """Measure the ceilings, then every planned row until the budget ends; always leave the outputs.
    `missed` is the link RESULTS.md gives for the analysis of its misses; `only` keeps the rows
    plan.select names (the others are not run, and RESULTS.md says which were)."""
    rows = plan.select(plan.build(tiny), only) if only else plan.build(tiny)
    out.mkdir(parents=True, exist_ok=True)
    budget = Budget(budget_s)
    results = Results(out, {**environment(device, budget_s, tiny), "missed": missed, "only": only or []})
    timer = Timer(device, reps=5, warmup=1, seconds=0.05) if tiny else Timer(device)
    signal.signal(signal.SIGTERM, _terminate)
    warnings.filterwarnings("ignore", category=UserWarning)   # SDPA's per-call backend notices
    try:
        ceilings, status = guarded(budget, lambda: probes.ceilings(timer, tiny))
        results.data["ceilings"] = ceilings or {"status": status}
        ceilings = ceilings or {}
        results.write()
        for row in rows:
            if row.kind == "dispatch":
                records, status = guarded(budget, lambda: probes.dispatch(timer, row.shape))
                records = records or [{"op": "dispatch_rmsnorm", "impl": "api", "status": status}]
            elif row.kind == "first_call":
                rounds_s = min(60.0, budget.left() / 2)
                records, status = guarded(budget, lambda: probes.first_calls(device.type, tiny, rounds_s),
                                          cap=200.0, needs=20.0)
                records = records or [{"op": "first_call", "impl": "all", "status": status}]
            else:
                records = _case_records(row, budget, timer, ceilings)
            results.add(records)
            _report_progress(results, row, records, budget_s - budget.left())
            if device.type == "cuda":
                torch.cuda.empty_cache()
        results.data["finished"] = True
    finally:
        try:
            results.write(plots=True)
        except Exception as error:  # noqa: BLE001 - keep what results.json already holds
            print(f"writing the final outputs failed: {error!r}", flush=True)
            results.data["plots"] = []
            (out / "RESULTS.md").write_text(render.markdown(results.data))
        print(f"wrote {out}/RESULTS.md ({len(results.data['records'])} results)", flush=True)
