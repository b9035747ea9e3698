"""Search strategies over a SearchSpace: differential evolution, pattern search, random search.

The strategies only see an `Objective` that measures a batch of configs at once (so the caller
can compile a whole batch in parallel) and returns one `Outcome` per config. All randomness comes
from one `random.Random(seed)`, so a search is reproducible for a deterministic objective.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from build_tools.autotune.space import Point, SearchSpace, config_key

FAILED = math.inf


@dataclass(frozen=True)
class Outcome:
    """Result of measuring one candidate: microseconds, or inf with the reason it failed."""

    us: float
    error: str | None = None
    skipped: bool = False    # not measured (the entry's time ran out): neither tried nor failed


class Objective(Protocol):
    def evaluate(self, configs: list) -> list[Outcome]: ...


@dataclass
class Trial:
    config: object
    key: str
    us: float
    error: str | None = None


@dataclass(frozen=True)
class SearchSettings:
    """How hard to search one (op, dtype, shape); defaults aim at a few seconds per shape."""

    strategy: str = "de"          # "de" (evolution + pattern search) or "random" (baseline)
    population: int = 8
    generations: int = 3
    pattern_rounds: int = 2
    pattern_starts: int = 1
    pattern_batch: int = 16
    max_evaluations: int = 48
    time_limit_s: float = 20.0
    seed: int = 0

    def evaluations_for_both_phases(self) -> int:
        """Configs the evolution (seeds and every generation) and the pattern search's rounds
        measure at most: an evaluation budget that leaves the pattern search its rounds."""
        return self._evolution_evaluations() + self.pattern_rounds * self.pattern_batch

    def pattern_rounds_within_budget(self) -> int:
        """Pattern-search rounds of `pattern_batch` configs that `max_evaluations` leaves after the
        evolution (rounded up: the budget itself stops the last one)."""
        left = max(self.max_evaluations - self._evolution_evaluations(), 0)
        return -(-left // self.pattern_batch)

    def _evolution_evaluations(self) -> int:
        return self.population * (self.generations + 1)


class Evaluations:
    """Bookkeeping of one search: every distinct config measured once, within the budget."""

    def __init__(
        self,
        space: SearchSpace,
        objective: Objective,
        max_evaluations: int,
        time_limit_s: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.space = space
        self.objective = objective
        self.max_evaluations = max_evaluations
        self.time_limit_s = time_limit_s
        self.clock = clock
        self.started = clock()
        self.trials: dict[str, Trial] = {}
        self.skipped = 0
        self.invalid_points: set[Point] = set()
        self._point_keys: dict[Point, str] = {}
        self._configs: dict[str, object] = {}

    @property
    def tried(self) -> int:
        return len(self.trials)

    def exhausted(self) -> bool:
        return (
            self.tried >= self.max_evaluations
            or self.clock() - self.started >= self.time_limit_s
        )

    def known(self, point: Point) -> bool:
        """Whether measuring `point` would learn nothing: it is illegal, or normalizes to a config
        already measured (knobs a kernel ignores normalize away: a Gluon kernel's indexing)."""
        key = self.key_of(point)
        return key is None or key in self.trials

    def key_of(self, point: Point):
        """The config key of `point` (None when illegal), decoded and normalized once."""
        if point in self.invalid_points:
            return None
        if point not in self._point_keys:
            config = self.space.decode(point)
            if config is None:
                self.invalid_points.add(point)
                return None
            self._point_keys[point] = config_key(config)
            self._configs[self._point_keys[point]] = config
        return self._point_keys[point]

    def measure(self, points: Sequence[Point]) -> list[float]:
        """Times of `points` (inf: illegal, failed, skipped or beyond the budget); new configs in
        one batch. The first batch is measured even when the time limit is already spent, so an
        entry always learns something; skipped outcomes are not recorded (they may be retried)."""
        keys = [self.key_of(p) for p in points]
        room = max(self.max_evaluations - self.tried, 0)
        if self.trials and self.clock() - self.started >= self.time_limit_s:
            room = 0
        fresh: list[str] = []
        for key in keys:
            if key is not None and key not in self.trials and key not in fresh and len(fresh) < room:
                fresh.append(key)
        if fresh:
            outcomes = self.objective.evaluate([self._configs[k] for k in fresh])
            for key, outcome in zip(fresh, outcomes):
                if outcome.skipped:
                    self.skipped += 1
                else:
                    self.trials[key] = Trial(self._configs[key], key, outcome.us, outcome.error)
        return [self.trials[k].us if k in self.trials else FAILED for k in keys]

    def ranked(self) -> list[Trial]:
        """Successful trials, fastest first (ties broken by config text for determinism)."""
        ok = [t for t in self.trials.values() if math.isfinite(t.us)]
        return sorted(ok, key=lambda t: (t.us, t.key))

    def point_of(self, trial: Trial) -> Point:
        return next(p for p, k in self._point_keys.items() if k == trial.key)


def _distinct(points) -> list[Point]:
    seen, result = set(), []
    for p in points:
        if p not in seen:
            seen.add(p)
            result.append(p)
    return result


def _distinct_configs(ev: Evaluations, points: Sequence[Point]) -> list[Point]:
    """The first of `points` for each config they normalize to."""
    seen, result = set(), []
    for p in points:
        key = ev.key_of(p)
        if key not in seen:
            seen.add(key)
            result.append(p)
    return result


def initial_population(space: SearchSpace, seeds: Sequence[Point], size: int, rng) -> list[Point]:
    """Seed points first, then distinct random points until `size` (or the space runs out)."""
    population = _distinct(seeds)[:size]
    total = math.prod(space.sizes)
    attempts = 0
    while len(population) < min(size, total) and attempts < 50 * size:
        attempts += 1
        point = space.random_point(rng)
        if point not in population:
            population.append(point)
    return population


def differential_evolution(
    ev: Evaluations,
    rng: random.Random,
    population: list[Point],
    generations: int,
    weight: float = 0.8,
    crossover: float = 0.6,
) -> None:
    """current-to-best/1/bin evolution on index vectors; each generation is one batch."""
    space = ev.space
    scores = ev.measure(population)
    population = list(population)
    if len(population) < 4:
        return
    for _ in range(generations):
        if ev.exhausted():
            return
        best = population[min(range(len(population)), key=lambda i: (scores[i], i))]
        trials = []
        for i, x in enumerate(population):
            b, c = rng.sample([j for j in range(len(population)) if j != i], 2)
            mutant = [
                x[d] + weight * (best[d] - x[d]) + weight * (population[b][d] - population[c][d])
                for d in range(space.dimensions)
            ]
            forced = rng.randrange(space.dimensions)
            trial = space.clip(
                [m if (d == forced or rng.random() < crossover) else x[d] for d, m in enumerate(mutant)]
            )
            if trial == x:
                d = rng.randrange(space.dimensions)
                trial = space.clip(trial[:d] + (rng.randrange(space.sizes[d]),) + trial[d + 1:])
            trials.append(trial)
        trial_scores = ev.measure(trials)
        for i, (trial, score) in enumerate(zip(trials, trial_scores)):
            if score <= scores[i]:
                population[i], scores[i] = trial, score


def _step_tier(space: SearchSpace, start: Point, neighbour: Point) -> int:
    """0 for a step along a whole-kernel knob, 1 along a loop's or a generated kernel's, 2 along a
    memory site's."""
    dim = next(d for d, (a, b) in enumerate(zip(start, neighbour)) if a != b)
    return 0 if dim in space.whole_kernel_dims else 2 if dim in space.site_dims else 1


def pattern_search(
    ev: Evaluations, starts: Sequence[Point], rounds: int, rng: random.Random, max_batch: int = 16
) -> None:
    """Greedy moves to the best neighbour of each start; all starts' neighbours form one batch,
    of which at most `max_batch` new configs are measured per round: first the steps along
    whole-kernel knobs (warps, stages, block sizes, the kernel's tunables); the room left goes half
    to a random choice of the steps along one loop's or generated kernel's knobs (a peeled tail,
    ring stages, a loop order, a back end) and half to the per-site steps (indexing, eviction),
    either taking what the other leaves. Sampled together, the sites' dozens of steps crowded out a
    loop's few, one of which was worth 10% (the forty-third session's peeled tails). Neighbours
    that normalize to a config measured or already chosen take no room. A start stops when every
    neighbour is measured and none is better."""
    current = _distinct(starts)
    scores = ev.measure(current)
    active = [math.isfinite(s) for s in scores]
    for _ in range(rounds):
        if ev.exhausted() or not any(active):
            return
        candidates = {i: ev.space.neighbours(p) for i, p in enumerate(current) if active[i]}
        batch = _distinct(p for ns in candidates.values() for p in ns)
        fresh = _distinct_configs(ev, [p for p in batch if not ev.known(p)])
        if len(fresh) > max_batch:
            tier = {p: min(_step_tier(ev.space, current[i], p) for i, ns in candidates.items() if p in ns)
                    for p in fresh}
            chosen = [p for p in fresh if tier[p] == 0][:max_batch]
            loops, sites = ([p for p in fresh if tier[p] == level] for level in (1, 2))
            room = max_batch - len(chosen)
            take = min(len(loops), max(room - room // 2, room - len(sites)))
            chosen += rng.sample(loops, take) + rng.sample(sites, min(room - take, len(sites)))
            taken = set(chosen)
            batch = [p for p in batch if ev.known(p) or p in taken]
        times = dict(zip(batch, ev.measure(batch)))
        for i, neighbours in candidates.items():
            measured = [p for p in neighbours if p in times]
            best = min(measured, key=lambda p: (times[p], p), default=None)
            if best is not None and times[best] < scores[i]:
                current[i], scores[i] = best, times[best]
            elif all(ev.known(p) for p in neighbours):
                active[i] = False


def random_search(ev: Evaluations, rng: random.Random, seeds: Sequence[Point], batch: int) -> None:
    """Baseline: the seeds, then uniformly random points in batches until the budget is spent."""
    ev.measure(list(seeds))
    stale = 0
    while not ev.exhausted() and stale < 3:
        before = ev.tried
        ev.measure([ev.space.random_point(rng) for _ in range(batch)])
        stale = stale + 1 if ev.tried == before else 0


@dataclass
class SearchResult:
    ranked: list[Trial]
    tried: int
    failed: int
    invalid: int
    errors: list[str] = field(default_factory=list)
    skipped: int = 0


def run_search(
    space: SearchSpace,
    objective: Objective,
    seeds: Sequence,
    settings: SearchSettings,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """Search one space: seeds (default config first, then neighbours' winners) start the search."""
    rng = random.Random(settings.seed)
    ev = Evaluations(space, objective, settings.max_evaluations, settings.time_limit_s, clock)
    seed_points = []
    for config in seeds:
        try:
            seed_points.append(space.encode(config))
        except Exception:  # a neighbour's config that this spec cannot express is just skipped
            continue
    if settings.strategy == "random":
        random_search(ev, rng, seed_points[:1], settings.population)
    elif settings.strategy == "de":
        population = initial_population(space, seed_points, settings.population, rng)
        differential_evolution(ev, rng, population, settings.generations)
        leaders = [ev.point_of(t) for t in ev.ranked()[: settings.pattern_starts]]
        pattern_search(ev, leaders, settings.pattern_rounds, rng, settings.pattern_batch)
    else:
        raise ValueError(f"unknown search strategy {settings.strategy!r}")
    failed = [t for t in ev.trials.values() if not math.isfinite(t.us)]
    return SearchResult(
        ranked=ev.ranked(),
        tried=ev.tried,
        failed=len(failed),
        invalid=len(ev.invalid_points),
        errors=[t.error for t in failed if t.error],
        skipped=ev.skipped,
    )
