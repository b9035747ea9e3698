"""Tunes the whole library (or some ops) for one architecture: resumable, budgeted, never fatal.

Each entry is tuned, recorded in the state file and merged into the output table before the
next starts, so a run stopped by its budget (or killed) keeps everything finished so far. An
exception in one entry is logged and the run moves on; `--resume` retries it once more.
"""
from __future__ import annotations

import json
import math
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from build_tools.autotune.bench import bind_fresh
from build_tools.autotune.entry import Limits, PoolObjective, tune_entry
from build_tools.autotune.plan import Entry, neighbour_configs
from build_tools.autotune.progress import RunProgress
from build_tools.autotune.search import SearchSettings
from build_tools.autotune.space import SearchSpace
from build_tools.autotune.state import TuneState
from build_tools.autotune.table import environment_header, load_table, merged_table, write_table
from helion_kernels._variant import canonical_json, variant_id

MAX_ATTEMPTS = 2
TABLE_FIELDS = ("op", "dtype", "shape", "specialization", "config", "variant", "us", "baseline_us")


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
    show_bar: bool = False
    input_seed: int = 0


@dataclass
class RunSummary:
    planned: int
    finished: list = field(default_factory=list)     # keys finished in this run
    failed: dict = field(default_factory=dict)       # key -> error
    skipped: list = field(default_factory=list)      # keys given up after MAX_ATTEMPTS
    stopped_for_budget: bool = False
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
    return {k: record[k] for k in TABLE_FIELDS}


def _round(us):
    return None if us is None or not math.isfinite(us) else round(us, 3)


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

    def _entry_time_limit(self, started: float) -> float:
        """Search seconds for the next entry: the per-entry cap, an even share of what is left of
        `target_total_s` over the unfinished entries (across resumed runs), and what is left of
        this run's budget, each less the measured per-entry overhead (re-benchmark, peers)."""
        planned = {e.key for e in self.entries}
        finished = [r["tuning"] for key, r in self.state.finished.items() if key in planned]
        overhead = sum(t.get("overhead", 0.0) for t in finished) / len(finished) if finished else 0.0
        limit = self.options.settings.time_limit_s
        if self.options.target_total_s:
            spent = sum(t["seconds"] for t in finished)
            remaining = max(len(self.entries) - len(finished), 1)
            limit = min(limit, (self.options.target_total_s - spent) / remaining - overhead)
        if self.options.budget_s is not None:
            limit = min(limit, self.options.budget_s - (self.clock() - started) - overhead)
        return max(limit, 0.0)

    def _seeds(self, entry: Entry, config_spec) -> list:
        default = config_spec.default_config()
        make = type(default)
        seeds = [default]
        incumbent = self.options.incumbents.get(entry.key)
        if incumbent is not None:
            seeds.append(make(incumbent))
        seeds += [make(c) for c in neighbour_configs(entry, self.state.finished)]
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

    def tune_one(self, entry: Entry, time_limit_s: float, limits: Limits | None = None) -> dict:
        options = self.options
        limits = limits or options.limits
        self.backend.start_entry(entry, options.input_seed)
        self.backend.bench.call("ready", timeout=limits.run_timeout_s, setup_timeout=limits.setup_timeout_s)
        args = entry.op.make_inputs(entry.shape, entry.dtype, options.device, options.input_seed)
        bound = bind_fresh(entry.op.kernel, args)
        del args
        incumbent = options.incumbents.get(entry.key)
        incumbent = type(bound.config_spec.default_config())(incumbent) if incumbent is not None else None
        settings = replace(options.settings, time_limit_s=time_limit_s)
        result = tune_entry(
            SearchSpace(bound.config_spec), self._objective(limits), self.backend.bench,
            self._seeds(entry, bound.config_spec), settings, limits, incumbent,
            options.with_baselines, self.clock,
        )
        config = plain(result.config)
        specialization = plain(bound.specialization_key())
        tuning = {
            "seconds": round(result.seconds, 2), "overhead": round(result.seconds - result.search_seconds, 2),
            "tried": result.tried, "failed": result.failed,
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
            "variant": variant_id(entry.op_name, config, specialization),
            "us": _round(result.us),
            "baseline_us": {k: _round(v) for k, v in result.baseline_us.items()},
            "tuning": tuning,
        }

    def _objective(self, limits: Limits) -> PoolObjective:
        return PoolObjective(self.backend.pool, self.backend.bench, limits, self.progress.candidate)

    def write_table(self) -> None:
        header = environment_header(self.options.arch, self.options.device_name)
        entries = [table_entry(r) for r in self.state.finished.values()]
        write_table(self.options.out_path, merged_table(header, self.existing, entries))

    def run(self) -> RunSummary:
        started = self.clock()
        summary = RunSummary(planned=len(self.entries))
        todo = [e for e in self.entries if not self.state.is_finished(e.key)]
        entry_times: list[float] = []
        try:
            for number, entry in enumerate(todo, start=1):
                if self.state.attempts(entry.key) >= MAX_ATTEMPTS:
                    summary.skipped.append(entry.key)
                    continue
                if self._out_of_budget(started, entry_times):
                    summary.stopped_for_budget = True
                    self.log.warning("budget reached: stopping before %s (%d entries left)",
                                     entry.label(), len(todo) - number + 1)
                    break
                self.progress.start_entry(self.entries.index(entry) + 1, entry.label())
                entry_started = self.clock()
                try:
                    if number < len(todo):
                        self.backend.prepare_next(todo[number], self.options.input_seed)
                    time_limit_s = self._entry_time_limit(started)
                    record = self.tune_one(entry, time_limit_s, self._limits(started, time_limit_s))
                    self.state.mark_finished(entry.key, record)
                    summary.finished.append(entry.key)
                    t = record["tuning"]
                    self.log.info("  %.3f us (eager %s, compile %s) | %d configs tried, %d failed, %.1fs",
                                  record["us"], record["baseline_us"].get("eager"),
                                  record["baseline_us"].get("compile"), t["tried"], t["failed"], t["seconds"])
                except Exception as error:  # one entry's failure never stops the run
                    reason = f"{type(error).__name__}: {one_line(str(error))}"
                    self.log.error("  failed: %s", reason)
                    self.log.debug("%s\n%s", error, traceback.format_exc())
                    self.state.mark_failed(entry.key, reason)
                    summary.failed[entry.key] = reason
                entry_times.append(self.clock() - entry_started)
                self.write_table()
                self.progress.finish_entry()
        finally:
            self.progress.close()
        self.write_table()
        summary.records = dict(self.state.finished)
        write_run_report(self.options.work_dir / "tune-report.md", self.entries, self.state, summary)
        self.log.info("finished %d/%d entries (%d this run, %d failed)%s; table: %s",
                      len(self.state.finished), len(self.entries), len(summary.finished), len(summary.failed),
                      ", stopped for budget" if summary.stopped_for_budget else "", self.options.out_path)
        return summary

    def _out_of_budget(self, started: float, entry_times: list) -> bool:
        if self.options.budget_s is None:
            return False
        left = self.options.budget_s - (self.clock() - started)
        expected = max(entry_times) if entry_times else 0.0
        return left <= 0 or left < min(expected, self.options.settings.time_limit_s) * 1.2


def write_run_report(path: Path, entries, state: TuneState, summary: RunSummary) -> None:
    """Markdown table of every planned entry: time, peers, tuning seconds and configs tried."""
    lines = [
        "| op | dtype | shape | us | eager us | compile us | tune s | tried | failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in entries:
        record = state.finished.get(entry.key)
        shape = canonical_json(entry.shape)
        if record is None:
            error = state.data["failed"].get(entry.key, {}).get("error", "not tuned yet")
            lines.append(f"| {entry.op_name} | {entry.dtype_name} | `{shape}` | {error[:80]} | | | | | |")
            continue
        t, b = record["tuning"], record["baseline_us"]
        lines.append(
            f"| {entry.op_name} | {entry.dtype_name} | `{shape}` | {record['us']} | {b.get('eager')} | "
            f"{b.get('compile')} | {t['seconds']} | {t['tried']} | {t['failed']} |"
        )
    seconds = [r["tuning"]["seconds"] for r in state.finished.values()]
    head = (
        f"# Tuning report ({len(state.finished)}/{len(entries)} entries finished"
        f"{', stopped for budget' if summary.stopped_for_budget else ''})\n\n"
        f"Tuning time: {sum(seconds):.0f} s in all, {sum(seconds) / max(len(seconds), 1):.1f} s per entry.\n\n"
    )
    path.write_text(head + "\n".join(lines) + "\n")
