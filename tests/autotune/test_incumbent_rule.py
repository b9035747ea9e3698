"""tune_entry keeps the incumbent (the config that ships without the result) unless the search's
best finalist beats it, side by side, by more than the noise and the minimum gain."""
import math

import pytest
from autotune_fakes import BowlObjective, FakeConfigSpec

from build_tools.autotune.entry import EntryFailed, Limits, beats, Measured, tune_entry
from build_tools.autotune.search import SearchSettings
from build_tools.autotune.space import SearchSpace, config_key

SPEC = FakeConfigSpec()
OPTIMUM = {"block_sizes": [128, 32], "num_warps": 8, "num_stages": 3, "indexing": "block_ptr"}
INCUMBENT = SPEC.normalize({"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"})
SETTINGS = SearchSettings(population=8, generations=3, pattern_rounds=4, max_evaluations=80)
LIMITS = Limits(finalists=2, rounds=3, per_round=2, min_gain=0.02)


class RemeasureBench:
    """Interleaved re-benchmark that reports `times[config key]` with a relative `jitter`
    spread over its rounds (the search objective's times decide nothing here)."""

    def __init__(self, times, jitter=0.0, failing=()):
        self.times = times
        self.jitter = jitter
        self.failing = set(failing)
        self.asked = []

    def call(self, kind, configs, rounds, per_round, timeout=0.0, setup_timeout=0.0):
        assert kind == "remeasure"
        self.asked = [config_key(c) for c in configs]
        results = []
        for config in configs:
            key = config_key(config)
            if key in self.failing:
                results.append({"samples": [], "error": "wrong output"})
                continue
            base = self.times[key]
            scales = [1.0 + self.jitter * (r - (rounds - 1) / 2) for r in range(rounds)]
            results.append({"samples": [[base * s] * per_round for s in scales], "error": None})
        return results


def tune(bench_times, jitter=0.0, failing=()):
    objective = BowlObjective(SPEC, OPTIMUM)
    found_best = SPEC.normalize(OPTIMUM)
    times = {config_key(found_best): bench_times["found"], config_key(INCUMBENT): bench_times["incumbent"]}

    class Bench(RemeasureBench):
        def call(self, kind, configs, rounds, per_round, **kw):
            for config in configs:  # the other finalists are far slower than both
                times.setdefault(config_key(config), 10 * max(bench_times.values()))
            return super().call(kind, configs, rounds, per_round, **kw)

    bench = Bench(times, jitter, {config_key(INCUMBENT)} if "incumbent" in failing else ())
    result = tune_entry(SearchSpace(SPEC), objective, bench, [SPEC.default_config()], SETTINGS, LIMITS, INCUMBENT)
    return result, bench


def test_a_finalist_faster_beyond_noise_displaces_the_incumbent():
    result, bench = tune({"found": 80.0, "incumbent": 100.0}, jitter=0.01)
    assert config_key(INCUMBENT) in bench.asked
    assert config_key(result.config) == config_key(SPEC.normalize(OPTIMUM))
    assert result.us == pytest.approx(80.0, rel=0.02)
    assert result.incumbent.us == pytest.approx(100.0, rel=0.02)


def test_a_finalist_within_the_noise_leaves_the_incumbent():
    result, _ = tune({"found": 97.0, "incumbent": 100.0}, jitter=0.05)
    assert config_key(result.config) == config_key(INCUMBENT)
    assert result.us == pytest.approx(100.0, rel=0.05)


def test_a_gain_below_the_minimum_leaves_the_incumbent_even_without_noise():
    result, _ = tune({"found": 99.0, "incumbent": 100.0})
    assert config_key(result.config) == config_key(INCUMBENT)


def test_a_slower_search_result_never_replaces_the_incumbent():
    result, _ = tune({"found": 180.0, "incumbent": 100.0})
    assert config_key(result.config) == config_key(INCUMBENT)


def test_a_failing_incumbent_gives_way_to_the_search():
    result, _ = tune({"found": 180.0, "incumbent": 100.0}, failing={"incumbent"})
    assert config_key(result.config) == config_key(SPEC.normalize(OPTIMUM))
    assert result.incumbent.error == "wrong output" and math.isinf(result.incumbent.us)


def test_every_finalist_failing_is_an_entry_failure():
    objective = BowlObjective(SPEC, OPTIMUM)

    class AllFail:
        def call(self, kind, configs, *args, **kw):
            return [{"samples": [], "error": "wrong output"} for _ in configs]

    with pytest.raises(EntryFailed):
        tune_entry(SearchSpace(SPEC), objective, AllFail(), [SPEC.default_config()], SETTINGS, LIMITS, INCUMBENT)


def test_beats_needs_more_than_both_noises_and_the_minimum_gain():
    old = Measured(None, 100.0, 0.01)
    assert beats(Measured(None, 90.0, 0.01), old, 0.02)
    assert not beats(Measured(None, 90.0, 0.12), old, 0.02)
    assert not beats(Measured(None, 99.0, 0.0), Measured(None, 100.0, 0.0), 0.02)


def test_the_incumbent_is_measured_even_when_every_search_candidate_failed():
    objective = BowlObjective(SPEC, OPTIMUM, failing=lambda config: True)
    bench = RemeasureBench({config_key(INCUMBENT): 100.0})
    result = tune_entry(SearchSpace(SPEC), objective, bench, [SPEC.default_config()], SETTINGS, LIMITS, INCUMBENT)
    assert bench.asked == [config_key(INCUMBENT)]
    assert config_key(result.config) == config_key(INCUMBENT) and result.us == 100.0
    with pytest.raises(EntryFailed, match="candidates failed"):
        tune_entry(SearchSpace(SPEC), BowlObjective(SPEC, OPTIMUM, failing=lambda config: True), bench,
                   [SPEC.default_config()], SETTINGS, LIMITS, None)


def test_a_static_winner_names_the_fastest_dynamic_config():
    """The config a static_reduction_sizes winner's entry runs at other reduction sizes: the fastest
    re-measured config without the flag, else the search's fastest, else none."""
    from build_tools.autotune.entry import fastest_dynamic
    from build_tools.autotune.search import Trial

    static = {"static_reduction_sizes": True, "num_warps": 32}
    slow, fast, broken = ({"static_reduction_sizes": False, "num_warps": w} for w in (8, 16, 4))
    measured = [Measured(static, 10.0, 0.0), Measured(slow, 14.0, 0.0), Measured(fast, 12.0, 0.0),
                Measured(broken, math.inf, 0.0, [], "wrong output")]
    assert fastest_dynamic(measured, [Trial(broken, "b", 1.0)]) == fast
    assert fastest_dynamic(measured[:1], [Trial(static, "s", 9.0), Trial(slow, "d", 13.0)]) == slow
    assert fastest_dynamic(measured[:1], [Trial(static, "s", 9.0), Trial(broken, "b", math.inf)]) is None
    result, _ = tune({"found": 1.0, "incumbent": 2.0})
    assert result.dynamic_config is None  # the fake space has no static configs
