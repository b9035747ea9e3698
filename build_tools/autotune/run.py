"""Tunes the whole library (or some ops) for one architecture: resumable, budgeted, never fatal.

Each entry is tuned, recorded in the state file and merged into the output table before the
next starts, so a run stopped by its budget (or killed) keeps everything finished so far. An
exception in one entry is logged and the run moves on; `--resume` retries it once more.
Time: each entry gets an even share of what is left of `target_total_s` (across resumed runs,
from the wall time the state has recorded), less the per-entry overhead measured so far; an
entry that would not fit what is left of this run's `budget_s` is not started ("not run").
"""
from __future__ import annotations

import json
import math
import statistics
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from build_tools.autotune.bench import bind_fresh
from build_tools.autotune.entry import Limits, PoolObjective, no_peers, tune_entry
from build_tools.autotune.plan import Entry, neighbour_configs, untuned_config
from build_tools.autotune.progress import RunProgress
from build_tools.autotune.search import SearchSettings
from build_tools.autotune.space import SearchSpace, runnable_backends
from build_tools.autotune.state import TuneState
from build_tools.autotune.table import environment_header, load_table, merged_table, write_table
from build_tools.autotune.workers import WorkerFailure
from helion_kernels._variant import canonical_json, variant_id

MAX_ATTEMPTS = 2
TABLE_FIELDS = ("op", "dtype", "shape", "specialization", "config", "variant", "us", "baseline_us")
MIN_SEARCH_S = 1.5        # an entry's search never gets less; one that cannot is not started
FIRST_OVERHEAD_S = 2.0    # per-entry overhead (setup, re-benchmark, peers) assumed before any is measured


@dataclass
class RunOptions:
    arch: str
    out_path: Path
    work_dir: Path
    device: str = "cuda"
    device_name: str = ""
    budget_s: float | None = None
    resume: bool = False
    settings: SearchSettings = field(default_factory=SearchSettings)
    limits: Limits = field(default_factory=Limits)
    with_baselines: bool = True
    target_total_s: float | None = None   # spread this much time over all planned entries
    incumbents: dict = field(default_factory=dict)   # entry key -> shipped config (retune)
    # table entries seeding searches: the architecture's that run on this device (tune: those of its
    # other tables), and the default table's, which give an entry's incumbent only where those have none
    arch_entries: list = field(default_factory=list)
    seed_entries: list = field(default_factory=list)
    # retune: the entries of the architecture's other tables that this device's own table hides;
    # each search also starts from the nearest one's config (never an incumbent). On 2026-12-02 the
    # H100's attention forward configs ran 1.03-1.18x faster on the H200 than the H200's own entries.
    other_device_entries: list = field(default_factory=list)
    show_bar: bool = False
    input_seed: int = 0


@dataclass
class RunSummary:
    planned: int
    finished: list = field(default_factory=list)     # keys finished in this run
    failed: dict = field(default_factory=dict)       # key -> error
    skipped: list = field(default_factory=list)      # keys given up after MAX_ATTEMPTS
    stopped_for_budget: bool = False
    not_run: list = field(default_factory=list)      # keys left for a later run (budget)
    records: dict = field(default_factory=dict)      # every finished key (this and earlier runs)


def plain(config) -> dict:
    """A Config (or any Mapping) as plain JSON data."""
    return json.loads(canonical_json(config))


def release_inputs(kernel, device: str) -> None:
    """Drop the kernel's cached bound (it holds the inputs) and return the memory to the device."""
    reset = getattr(kernel, "reset", None)
    if reset is not None:
        reset()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def one_line(text: str) -> str:
    """The last non-empty line of a message (a worker's traceback ends with the error itself)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


def table_entry(record: dict) -> dict:
    """The record's table fields, plus `dynamic_config` when its config compiles the reduction
    sizes in, and `baseline_notes` when a peer was skipped or failed."""
    entry = {k: record[k] for k in TABLE_FIELDS}
    if record.get("dynamic_config"):
        entry["dynamic_config"] = record["dynamic_config"]
    if record.get("baseline_notes"):
        entry["baseline_notes"] = record["baseline_notes"]
    return entry


def _round(us):
    return None if us is None or not math.isfinite(us) else round(us, 3)


def _records(entries) -> list:
    """The table entries that name a config of a shape."""
    return [e for e in entries if {"op", "dtype", "shape", "config"} <= e.keys()]


class Tuner:
    """Runs the planned entries through one backend; see the module docstring."""

    def __init__(self, options: RunOptions, entries: list[Entry], backend, clock: Callable[[], float] = time.monotonic):
        self.options = options
        self.backend = backend
        self.clock = clock
        self.entries = list(entries)
        options.work_dir.mkdir(parents=True, exist_ok=True)
        self.state = TuneState.open(options.work_dir / "state.json", options.arch, options.resume)
        self.progress = RunProgress(len(self.entries), options.show_bar, options.work_dir / "tune.log")
        self.log = self.progress.log
        try:
            self.existing = load_table(options.out_path)
        except (ValueError, OSError) as error:
            self.log.warning("ignoring unreadable %s: %s", options.out_path, error)
            self.existing = None
        # Configs of the table being replaced and of the seed tables start the searches of the
        # nearest shapes too, so a tuned entry starts from at least what would ship without it.
        self.arch_records = _records(options.arch_entries)
        self.default_records = _records(options.seed_entries)
        existing = _records((self.existing or {}).get("entries", []))
        self.seed_records = dict(enumerate(existing + self.arch_records + self.default_records))
        self.other_device_records = dict(enumerate(_records(options.other_device_entries)))

    def _overhead(self) -> float:
        """Median wall seconds an entry spends outside its search (setup, re-benchmark, peers),
        not counting the worker start-up of a run's first entry (whose peers are not prefetched
        either: the median keeps that one entry from weighing on the rest)."""
        planned = {e.key for e in self.entries}
        tunings = [r["tuning"] for key, r in self.state.finished.items() if key in planned and "wall" in r["tuning"]]
        if not tunings:
            return FIRST_OVERHEAD_S
        return statistics.median(t["wall"] - t["search"] - t.get("startup", 0.0) for t in tunings)

    def _entry_time_limit(self, started: float) -> float | None:
        """Search seconds for the next entry: the per-entry cap and an even share of what is left
        of `target_total_s` over the unfinished entries, less the overhead, but at least
        MIN_SEARCH_S; None when what is left of this run's budget cannot fit that."""
        overhead = self._overhead()
        limit = self.options.settings.time_limit_s
        if self.options.target_total_s:
            remaining = sum(1 for e in self.entries
                            if not self.state.is_finished(e.key) and self.state.attempts(e.key) < MAX_ATTEMPTS)
            share = (self.options.target_total_s - self.state.spent_s) / max(remaining, 1)
            limit = min(limit, share - overhead)
        limit = max(limit, MIN_SEARCH_S)
        if self.options.budget_s is not None:
            left = self.options.budget_s - (self.clock() - started) - overhead
            if left < MIN_SEARCH_S:
                return None
            limit = min(limit, left)
        return limit

    def _seeds(self, entry: Entry, config_spec) -> list:
        default = config_spec.default_config()
        make = type(default)
        seeds = [default]
        incumbent = self.options.incumbents.get(entry.key)
        if incumbent is not None:
            seeds.append(make(incumbent))
        seeds += [make(c) for c in neighbour_configs(entry, self.state.finished)]
        seeds += [make(c) for c in neighbour_configs(entry, self.seed_records)]
        seeds += [make(c) for c in neighbour_configs(entry, self.other_device_records, limit=1)]
        return seeds

    def _limits(self, started: float, time_limit_s: float) -> Limits:
        """The run's limits, with every timeout cut to what this run's budget has left."""
        limits = self.options.limits
        if self.options.budget_s is None:
            return limits
        cap = max(self.options.budget_s - (self.clock() - started) - time_limit_s, 10.0)
        return replace(
            limits,
            compile_timeout_s=min(limits.compile_timeout_s, cap),
            run_timeout_s=min(limits.run_timeout_s, cap),
            baseline_timeout_s=min(limits.baseline_timeout_s, cap),
        )

    def tune_one(self, entry: Entry, time_limit_s: float, limits: Limits | None = None, first: bool = False) -> dict:
        options = self.options
        limits = limits or options.limits
        entry_started = self.clock()
        self.backend.start_entry(entry, options.input_seed)
        if first:  # worker processes are starting: let them all finish before the clock runs
            self.backend.wait_ready(limits.setup_timeout_s)
        startup = self.clock() - entry_started
        self.backend.bench.call("ready", timeout=limits.run_timeout_s, setup_timeout=limits.setup_timeout_s)
        args = entry.op.make_inputs(entry.shape, entry.dtype, options.device, options.input_seed)
        bound = bind_fresh(entry.op.kernel, args)
        del args
        incumbent = (options.incumbents.get(entry.key) or untuned_config(entry, self.arch_records)
                     or untuned_config(entry, self.default_records))
        if incumbent is not None:
            incumbent = bound.config_spec.normalize(type(bound.config_spec.default_config())(incumbent))
        settings = replace(options.settings, time_limit_s=time_limit_s)
        objective = PoolObjective(self.backend.pool, self.backend.bench, limits, self.progress.candidate,
                                  deadline=time.monotonic() + time_limit_s)
        result = tune_entry(
            SearchSpace(bound.config_spec, runnable_backends(options.device)), objective, self.backend.bench,
            self._seeds(entry, bound.config_spec), settings, limits, incumbent,
            (lambda: self._peers(entry, limits)) if options.with_baselines else no_peers, self.clock,
        )
        config = plain(result.config)
        specialization = plain(bound.specialization_key())
        tuning = {
            "seconds": round(result.seconds, 2), "search": round(result.search_seconds, 2),
            "wall": round(self.clock() - entry_started, 2), "startup": round(startup, 2) if first else 0.0,
            "tried": result.tried, "failed": result.failed, "skipped": result.skipped,
            "invalid": result.invalid, "noise": round(result.noise, 4), "errors": result.errors,
        }
        if result.incumbent is not None:
            tuning["incumbent"] = {
                "config": plain(result.incumbent.config), "us": _round(result.incumbent.us),
                "noise": round(result.incumbent.noise, 4), "error": result.incumbent.error,
            }
        del bound
        release_inputs(entry.op.kernel, options.device)
        return {
            "op": entry.op_name, "dtype": entry.dtype_name, "shape": entry.shape,
            "specialization": specialization, "config": config,
            **({"dynamic_config": plain(result.dynamic_config)} if result.dynamic_config is not None else {}),
            "variant": variant_id(entry.op_name, config, specialization),
            "us": _round(result.us),
            "baseline_us": {k: _round(v) for k, v in result.baseline_us.items()},
            "baseline_notes": result.peer_notes,
            "tuning": tuning,
        }

    def _peers(self, entry: Entry, limits: Limits) -> tuple[dict, dict]:
        """Eager and torch.compile times of the entry's baseline, and notes on any peer skipped:
        torch.compile is timed only if its background compile is done within `peer_wait_s`
        (compiling it here could take longer than tuning the entry)."""
        compiled = self.backend.peer_ready(entry, limits.peer_wait_s)
        notes = {} if compiled else {"compile": f"skipped: not compiled within {limits.peer_wait_s:g}s of tuning"}
        try:
            us = self.backend.bench.call(
                "baselines", compiled, timeout=limits.baseline_timeout_s, setup_timeout=limits.setup_timeout_s
            )
        except WorkerFailure as failure:
            return {"eager": None, "compile": None}, {"eager": f"failed: {one_line(str(failure))}",
                                                      "compile": notes.get("compile", "failed")}
        return us, notes

    def write_table(self) -> None:
        header = environment_header(self.options.arch, self.options.device_name)
        entries = [table_entry(r) for r in self.state.finished.values()]
        write_table(self.options.out_path, merged_table(header, self.existing, entries))

    def run(self) -> RunSummary:
        started = self.clock()
        summary = RunSummary(planned=len(self.entries))
        todo = [e for e in self.entries if not self.state.is_finished(e.key)]
        self.backend.plan([e for e in todo if self.state.attempts(e.key) < MAX_ATTEMPTS], self.options.input_seed)
        first = True
        try:
            for number, entry in enumerate(todo, start=1):
                if self.state.attempts(entry.key) >= MAX_ATTEMPTS:
                    summary.skipped.append(entry.key)
                    continue
                time_limit_s = self._entry_time_limit(started)
                if time_limit_s is None:
                    summary.stopped_for_budget = True
                    summary.not_run = [e.key for e in todo[number - 1:] if self.state.attempts(e.key) < MAX_ATTEMPTS]
                    self.log.warning("budget reached: %d entries not run, from %s on (run again with --resume)",
                                     len(summary.not_run), entry.label())
                    break
                self.progress.start_entry(self.entries.index(entry) + 1, entry.label())
                entry_started = self.clock()
                try:
                    record = self.tune_one(entry, time_limit_s, self._limits(started, time_limit_s), first)
                    self.state.mark_finished(entry.key, record)
                    summary.finished.append(entry.key)
                    t = record["tuning"]
                    self.log.info("  %.3f us (eager %s, compile %s) | %d configs tried, %d failed, %d skipped, "
                                  "search %.1fs, entry %.1fs", record["us"], record["baseline_us"].get("eager"),
                                  record["baseline_us"].get("compile"), t["tried"], t["failed"], t["skipped"],
                                  t["search"], t["wall"])
                except Exception as error:  # one entry's failure never stops the run
                    reason = f"{type(error).__name__}: {one_line(str(error))}"
                    self.log.error("  failed: %s", reason)
                    self.log.debug("%s\n%s", error, traceback.format_exc())
                    self.state.mark_failed(entry.key, reason)
                    summary.failed[entry.key] = reason
                first = False
                self.state.add_spent(self.clock() - entry_started)
                self.write_table()
                self.progress.finish_entry()
        finally:
            self.progress.close()
        self.write_table()
        summary.records = dict(self.state.finished)
        write_run_report(self.options.work_dir / "tune-report.md", self.entries, self.state, summary)
        self.log.info("finished %d/%d entries (%d this run, %d failed)%s; %.0fs spent in all; table: %s",
                      len(self.state.finished), len(self.entries), len(summary.finished), len(summary.failed),
                      ", stopped for budget" if summary.stopped_for_budget else "", self.state.spent_s,
                      self.options.out_path)
        return summary


def write_run_report(path: Path, entries, state: TuneState, summary: RunSummary) -> None:
    """Markdown table of every planned entry: time, peers, tuning seconds and configs tried."""
    lines = [
        "| op | dtype | shape | us | eager us | compile us | entry s | search s | tried | failed | skipped |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    not_run = set(summary.not_run)
    for entry in entries:
        record = state.finished.get(entry.key)
        shape = canonical_json(entry.shape)
        if record is None:
            failure = state.data["failed"].get(entry.key, {}).get("error")
            status = f"failed: {failure}" if failure else "not run (budget)" if entry.key in not_run else "not run"
            lines.append(f"| {entry.op_name} | {entry.dtype_name} | `{shape}` | {status[:80]} | | | | | | | |")
            continue
        t, b = record["tuning"], record["baseline_us"]
        compile_us = b.get("compile") if b.get("compile") is not None else (
            "skipped" if "compile" in record.get("baseline_notes", {}) else None)
        lines.append(
            f"| {entry.op_name} | {entry.dtype_name} | `{shape}` | {record['us']} | {b.get('eager')} | "
            f"{compile_us} | {t.get('wall', t['seconds'])} | {t.get('search', '')} | {t['tried']} | "
            f"{t['failed']} | {t.get('skipped', '')} |"
        )
    walls = [r["tuning"].get("wall", r["tuning"]["seconds"]) for r in state.finished.values()]
    head = (
        f"# Tuning report ({len(state.finished)}/{len(entries)} entries finished"
        f"{', stopped for budget' if summary.stopped_for_budget else ''})\n\n"
        f"Wall time: {state.spent_s:.0f} s in all over every run of this state; finished entries took "
        f"{sum(walls):.0f} s, {sum(walls) / max(len(walls), 1):.1f} s per entry.\n\n"
    )
    path.write_text(head + "\n".join(lines) + "\n")
