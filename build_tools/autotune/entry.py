"""Tunes one (op, dtype, shape): search, interleaved re-benchmark of the front runners, peers.

The search's objective compiles a batch of candidates in the worker pool (in parallel, which
fills the on-disk Triton cache) and measures each candidate in the benchmark worker as soon as it
has compiled. Past the entry's deadline (once some candidate has succeeded) nothing more is
compiled or measured: those candidates are skipped, not failed. Workers are reached through
`call(kind, *payload, timeout=...)`, so tests can swap in an in-process worker with a fake timer.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from build_tools.autotune.progress import LOGGER_NAME
from build_tools.autotune.search import Outcome, SearchSettings, run_search
from build_tools.autotune.space import SearchSpace, config_key
from build_tools.autotune.timing import median, relative_spread
from build_tools.autotune.workers import SKIPPED, Deadlines, WorkerFailure

log = logging.getLogger(LOGGER_NAME)


@dataclass(frozen=True)
class Limits:
    """Timeouts and measurement effort shared by every entry of a run."""

    compile_timeout_s: float = 90.0
    run_timeout_s: float = 60.0
    setup_timeout_s: float = 300.0
    baseline_timeout_s: float = 240.0
    finalists: int = 3
    rounds: int = 3
    per_round: int = 5
    straggler_factor: float = 4.0    # see workers.Deadlines
    straggler_min_s: float = 4.0
    min_run_timeout_s: float = 10.0  # a measurement near the deadline still gets this long
    peer_wait_s: float = 3.0         # longest wait for an entry's torch.compile peer to be compiled
    min_gain: float = 0.02           # a finalist displaces the incumbent only when faster by more than this and the noise


class EntryFailed(Exception):
    """No candidate of an entry compiled and passed the accuracy gate."""


def _out_of_memory(error) -> bool:
    return "out of memory" in str(error).lower()


SKIPPED_OUTCOME = Outcome(math.inf, SKIPPED, skipped=True)


class PoolObjective:
    """Search objective: parallel compile, then accuracy check and timing one by one, both within
    the entry's `deadline` (a time.monotonic() value; None: no deadline)."""

    def __init__(self, pool, bench, limits: Limits, on_outcome: Callable[[object, Outcome], None] = lambda c, o: None,
                 deadline: float | None = None):
        self.pool = pool
        self.bench = bench
        self.limits = limits
        self.on_outcome = on_outcome
        self.deadline = deadline
        self.best = math.inf

    def active_deadline(self) -> float | None:
        """The deadline, lifted until some candidate has succeeded (an entry needs one result)."""
        return self.deadline if math.isfinite(self.best) else None

    def _measure(self, config) -> Outcome:
        deadline = self.active_deadline()
        timeout = self.limits.run_timeout_s
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return SKIPPED_OUTCOME
            timeout = min(timeout, max(self.limits.min_run_timeout_s, left))
        best = self.best if math.isfinite(self.best) else None
        try:
            outcome = self.bench.call("measure", config, best, timeout=timeout, setup_timeout=self.limits.setup_timeout_s)
        except WorkerFailure as failure:
            return Outcome(math.inf, f"benchmark: {failure}")
        self.best = min(self.best, outcome.us)
        return outcome

    def evaluate(self, configs: list) -> list[Outcome]:
        started = time.monotonic()
        outcomes: list[Outcome | None] = [None] * len(configs)
        if self.pool is None:
            finished = ((i, True, None) for i in range(len(configs)))
        else:
            deadlines = Deadlines(self.active_deadline, self.limits.straggler_factor, self.limits.straggler_min_s)
            finished = self.pool.run(
                "warm", [(c,) for c in configs], self.limits.compile_timeout_s, self.limits.setup_timeout_s, deadlines
            )
        for index, ok, value in finished:
            if ok or _out_of_memory(value):  # the pool's copy of the inputs did not fit: try anyway
                outcomes[index] = self._measure(configs[index])
            elif value == SKIPPED:
                outcomes[index] = SKIPPED_OUTCOME
            else:
                lines = str(value).strip().splitlines() or ["?"]
                outcomes[index] = Outcome(math.inf, f"compile: {lines[-1]}")
            if not outcomes[index].skipped:
                self.on_outcome(configs[index], outcomes[index])
        skipped = sum(o.skipped for o in outcomes)
        log.debug("  batch of %d done in %.2fs%s", len(configs), time.monotonic() - started,
                  f" ({skipped} skipped at the deadline)" if skipped else "")
        return outcomes


@dataclass
class Measured:
    """A config's interleaved samples, summarized."""

    config: object
    us: float
    noise: float
    samples: list = field(default_factory=list)
    error: str | None = None

    @classmethod
    def from_remeasure(cls, config, result: dict) -> "Measured":
        if result["error"] is not None or not result["samples"]:
            return cls(config, math.inf, 0.0, [], result["error"] or "not measured")
        flat = [s for r in result["samples"] for s in r]
        round_medians = [median(r) for r in result["samples"]]
        return cls(config, median(flat), relative_spread(round_medians), result["samples"])


@dataclass
class EntryResult:
    config: object
    # where `config` compiles the reduction sizes in: the fastest config without that flag, which
    # the entry runs at other sizes (helion_kernels._variant.twin_config); else None
    dynamic_config: object
    us: float
    noise: float
    tried: int
    failed: int
    invalid: int
    seconds: float
    search_seconds: float
    baseline_us: dict
    winner: Measured
    incumbent: Measured | None = None
    errors: list = field(default_factory=list)
    skipped: int = 0
    peer_notes: dict = field(default_factory=dict)


def is_static(config) -> bool:
    return bool(config.get("static_reduction_sizes"))


def fastest_dynamic(measured: list, ranked: list):
    """The fastest re-measured config that keeps reduction sizes at run time, else the search's
    fastest such trial; None when neither ran one."""
    for candidates in (sorted(measured, key=lambda m: m.us), ranked):
        for candidate in candidates:
            if math.isfinite(candidate.us) and not is_static(candidate.config):
                return candidate.config
    return None


def no_peers() -> tuple[dict, dict]:
    """Peers of a run without them: nothing measured, nothing to note."""
    return {"eager": None, "compile": None}, {}


def beats(new: Measured, old: Measured, min_gain: float) -> bool:
    """Whether `new` is faster than `old` by more than both one's noise and `min_gain`."""
    return (old.us - new.us) / old.us > max(new.noise, old.noise, min_gain)


def tune_entry(
    space: SearchSpace,
    objective,
    bench,
    seeds: Sequence,
    settings: SearchSettings,
    limits: Limits,
    incumbent=None,
    peers: Callable[[], tuple[dict, dict]] = no_peers,
    clock: Callable[[], float] = time.monotonic,
) -> EntryResult:
    """Search, then re-benchmark the finalists and the incumbent (the config that ships without
    this result: the shipped one when retuning, the default table's when tuning) side by side,
    then measure the peers: `peers()` returns their microseconds and notes on any it skipped.
    The incumbent stays unless the best finalist beats it by more than the measured noise (and
    `limits.min_gain`): a short search that only matched it through noise changes nothing."""
    started = clock()
    found = run_search(space, objective, list(seeds), settings, clock)
    search_seconds = clock() - started
    finalists = [t.config for t in found.ranked[: limits.finalists]]
    if incumbent is not None and config_key(incumbent) not in {config_key(c) for c in finalists}:
        finalists.append(incumbent)
    if not finalists:
        sample = "; ".join(sorted(set(found.errors))[:3]) or "no legal config"
        raise EntryFailed(f"all {found.tried} candidates failed: {sample}")
    try:
        results = bench.call(
            "remeasure", finalists, limits.rounds, limits.per_round,
            timeout=limits.run_timeout_s * (len(finalists) + 1), setup_timeout=limits.setup_timeout_s,
        )
        measured = [Measured.from_remeasure(c, r) for c, r in zip(finalists, results)]
    except WorkerFailure as failure:  # fall back on the search's own single measurements
        measured = [Measured(t.config, t.us, 0.0, [], None) for t in found.ranked[: limits.finalists]]
        measured += [Measured(incumbent, math.inf, 0.0, [], f"remeasure: {failure}")] if incumbent else []
    by_key = {config_key(m.config): m for m in measured}
    contenders = [m for m in measured if math.isfinite(m.us)]
    if not contenders:
        raise EntryFailed("every finalist failed the re-benchmark: " + str(measured[0].error))
    winner = min(contenders, key=lambda m: (m.us, config_key(m.config)))
    kept = by_key.get(config_key(incumbent)) if incumbent is not None else None
    if kept is not None and kept is not winner and math.isfinite(kept.us) and not beats(winner, kept, limits.min_gain):
        winner = kept
    baseline_us, peer_notes = peers()
    return EntryResult(
        config=winner.config,
        dynamic_config=fastest_dynamic(contenders, found.ranked) if is_static(winner.config) else None,
        us=winner.us,
        noise=winner.noise,
        tried=found.tried,
        failed=found.failed,
        invalid=found.invalid,
        seconds=clock() - started,
        search_seconds=search_seconds,
        baseline_us=baseline_us,
        winner=winner,
        incumbent=by_key.get(config_key(incumbent)) if incumbent is not None else None,
        errors=sorted(set(found.errors))[:5],
        skipped=found.skipped,
        peer_notes=peer_notes,
    )
