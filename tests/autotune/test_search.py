"""Search strategies against a synthetic objective on the fake ConfigSpec."""
import itertools
import math

import pytest
from autotune_fakes import BowlObjective, FakeConfigSpec, FakeKnob, StepClock

from build_tools.autotune.search import Outcome, SearchSettings, run_search
from build_tools.autotune.space import SearchSpace, config_key

OPTIMUM = {"block_sizes": [128, 32], "num_warps": 8, "num_stages": 3, "indexing": "block_ptr"}


def brute_force_best(space, objective):
    best = math.inf
    for point in itertools.product(*(range(n) for n in space.sizes)):
        config = space.decode(point)
        if config is not None:
            best = min(best, objective.time_of(config))
    return best


def search(settings, failing=lambda c: False, clock=None):
    spec = FakeConfigSpec()
    space = SearchSpace(spec)
    objective = BowlObjective(spec, OPTIMUM, failing)
    kwargs = {"clock": clock} if clock else {}
    result = run_search(space, objective, [spec.default_config()], settings, **kwargs)
    return space, objective, result


def test_evolution_and_pattern_search_reach_the_optimum():
    settings = SearchSettings(population=8, generations=4, pattern_rounds=6, max_evaluations=120)
    space, objective, result = search(settings)
    assert result.ranked[0].us == brute_force_best(space, objective)
    assert result.tried <= 120


def test_same_seed_same_search_and_other_seed_other_search():
    settings = SearchSettings(seed=11)
    first = [[config_key(c) for c in b] for b in search(settings)[1].batches]
    again = [[config_key(c) for c in b] for b in search(settings)[1].batches]
    other = [[config_key(c) for c in b] for b in search(SearchSettings(seed=12))[1].batches]
    assert first == again
    assert first != other


def test_default_config_is_in_the_first_batch():
    spec = FakeConfigSpec()
    _, objective, _ = search(SearchSettings())
    assert config_key(spec.default_config()) in [config_key(c) for c in objective.batches[0]]


def test_neighbour_seeds_start_the_population():
    spec = FakeConfigSpec()
    space = SearchSpace(spec)
    objective = BowlObjective(spec, OPTIMUM)
    result = run_search(space, objective, [spec.default_config(), OPTIMUM], SearchSettings())
    first_batch = [config_key(c) for c in objective.batches[0]]
    assert config_key(spec.normalize(OPTIMUM)) in first_batch
    assert result.ranked[0].us == 10.0


def test_each_config_is_measured_once_and_the_budget_holds():
    _, objective, result = search(SearchSettings(max_evaluations=20, generations=10))
    seen = [config_key(c) for b in objective.batches for c in b]
    assert len(seen) == len(set(seen)) == result.tried
    assert result.tried <= 20


def test_time_limit_stops_the_search_between_batches():
    settings = SearchSettings(generations=50, pattern_rounds=50, max_evaluations=10_000, time_limit_s=5)
    _, objective, _ = search(settings, clock=StepClock(step=1.0))
    assert 1 <= len(objective.batches) <= 5


def test_failing_candidates_are_skipped_not_fatal():
    failing = lambda config: config["num_warps"] == 8  # noqa: E731  (the optimum's warps fail)
    _, _, result = search(SearchSettings(pattern_rounds=6, max_evaluations=120), failing=failing)
    assert result.failed > 0
    assert result.errors and all(e == "fake compile error" for e in result.errors)
    assert all(t.config["num_warps"] != 8 and math.isfinite(t.us) for t in result.ranked)


def test_random_search_baseline_spends_its_budget():
    _, objective, result = search(SearchSettings(strategy="random", max_evaluations=30))
    assert result.tried == 30
    assert len(objective.batches) > 1


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError):
        search(SearchSettings(strategy="annealing"))


def test_evolution_beats_random_at_equal_budget_on_average():
    de, rnd = [], []
    for seed in range(6):
        de.append(search(SearchSettings(seed=seed, max_evaluations=40))[2].ranked[0].us)
        rnd.append(search(SearchSettings(strategy="random", seed=seed, max_evaluations=40))[2].ranked[0].us)
    assert sum(de) < sum(rnd)


def test_pattern_search_batches_are_capped_but_still_converge():
    settings = SearchSettings(population=4, generations=0, pattern_rounds=40, pattern_batch=3, max_evaluations=400)
    space, objective, result = search(settings)
    assert all(len(b) <= 4 for b in objective.batches[1:])
    assert result.ranked[0].us == brute_force_best(space, objective)


class SkippingObjective(BowlObjective):
    """Skips (as a deadline would) every candidate after the first `measured` of the search."""

    def __init__(self, spec, measured):
        super().__init__(spec, OPTIMUM)
        self.left = measured

    def evaluate(self, configs):
        outcomes = super().evaluate(configs)
        result = []
        for outcome in outcomes:
            result.append(outcome if self.left > 0 else Outcome(math.inf, "skipped", skipped=True))
            self.left -= 1
        return result


def test_skipped_candidates_are_neither_tried_nor_failed():
    spec = FakeConfigSpec()
    objective = SkippingObjective(spec, measured=3)
    settings = SearchSettings(population=8, generations=2, pattern_rounds=0, max_evaluations=100)
    result = run_search(SearchSpace(spec), objective, [spec.default_config()], settings)
    assert result.tried == 3 and result.failed == 0 and len(result.ranked) == 3
    assert result.skipped == sum(len(b) for b in objective.batches) - 3 > 0


def test_the_first_batch_is_measured_even_without_time():
    settings = SearchSettings(population=4, generations=5, pattern_rounds=5, time_limit_s=0)
    _, objective, result = search(settings, clock=StepClock(step=1.0))
    assert len(objective.batches) == 1 and result.tried == len(objective.batches[0]) and result.ranked


class ManySitesSpec(FakeConfigSpec):
    """The fake spec plus ten per-site eviction knobs (indexed, so not whole-kernel knobs)."""

    KNOBS = FakeConfigSpec.KNOBS + [FakeKnob("load_eviction_policies", i, ["", "first", "last"]) for i in range(10)]

    def default_config(self):
        return {**super().default_config(), "load_eviction_policies": [""] * 10}

    def normalize(self, config):
        full = super().normalize(config)
        full["load_eviction_policies"] = list(full["load_eviction_policies"])
        return full


def test_pattern_search_takes_whole_kernel_steps_before_per_site_steps():
    # 10 whole-kernel and 20 per-site neighbours, 10 measured per round: the one better neighbour
    # (twice the warps) is a whole-kernel step, so the first round finds it whatever the seed
    spec = ManySitesSpec()
    optimum = {**spec.default_config(), "num_warps": 8}
    for seed in range(5):
        objective = BowlObjective(spec, optimum)
        settings = SearchSettings(population=1, generations=0, pattern_rounds=1, pattern_batch=10,
                                  max_evaluations=100, seed=seed)
        result = run_search(SearchSpace(spec), objective, [spec.default_config()], settings)
        assert len(objective.batches) == 2 and len(objective.batches[1]) == 10
        assert result.ranked[0].config["num_warps"] == 8 and result.ranked[0].us == 10.0


class LoopsAndSitesSpec(ManySitesSpec):
    """ManySitesSpec plus a peel flag for each of three loops; the kernel ignores the eviction
    policy of its last five sites (they normalize to the default, as a Gluon kernel's TMA loads do)."""

    KNOBS = ManySitesSpec.KNOBS + [FakeKnob("range_peel_tails", i, [False, True]) for i in range(3)]

    def default_config(self):
        return {**super().default_config(), "range_peel_tails": [False] * 3}

    def normalize(self, config):
        full = super().normalize(config)
        full["load_eviction_policies"] = full["load_eviction_policies"][:5] + [""] * 5
        full["range_peel_tails"] = list(full["range_peel_tails"])
        return full


def first_pattern_round(spec, optimum, seed, batch):
    objective = BowlObjective(spec, optimum)
    settings = SearchSettings(population=1, generations=0, pattern_rounds=1, pattern_batch=batch,
                              max_evaluations=100, seed=seed)
    result = run_search(SearchSpace(spec), objective, [spec.default_config()], settings)
    return objective, result


def test_pattern_search_gives_loop_steps_half_the_room_left():
    # 10 whole-kernel, 3 loop and 10 effective per-site neighbours, 16 measured per round: half the
    # 6 left go to loop steps; the one better neighbour peels the second loop, so the first round
    # finds it whatever the seed
    spec = LoopsAndSitesSpec()
    optimum = {**spec.default_config(), "range_peel_tails": [False, True, False]}
    for seed in range(5):
        objective, result = first_pattern_round(spec, optimum, seed, batch=16)
        assert len(objective.batches) == 2 and len(objective.batches[1]) == 16
        assert result.ranked[0].config["range_peel_tails"] == [False, True, False]
        assert result.ranked[0].us == 10.0


def test_neighbours_a_kernel_ignores_take_no_room_in_a_round():
    # the 10 neighbours along ignored sites normalize to the start, which is measured: the round
    # measures 15 new configs (10 whole-kernel, 3 loop, 2 of the 10 effective site steps)
    spec = LoopsAndSitesSpec()
    for seed in range(5):
        objective, _ = first_pattern_round(spec, spec.default_config(), seed, batch=15)
        keys = [config_key(c) for c in objective.batches[1]]
        assert len(keys) == len(set(keys)) == 15
        assert config_key(spec.normalize(spec.default_config())) not in keys
        assert all(c["load_eviction_policies"][5:] == [""] * 5 for c in objective.batches[1])


def test_the_evaluation_budget_for_both_phases_leaves_the_pattern_search_its_rounds():
    settings = SearchSettings(population=13, generations=3, pattern_rounds=2, pattern_batch=16)
    assert settings.evaluations_for_both_phases() == 13 * 4 + 2 * 16
    spec = ManySitesSpec()
    settings = SearchSettings(population=6, generations=2, pattern_rounds=2, pattern_batch=10)
    objective = BowlObjective(spec, {**spec.default_config(), "num_stages": 4})
    run_search(SearchSpace(spec), objective, [spec.default_config()],
               SearchSettings(**{**settings.__dict__, "max_evaluations": settings.evaluations_for_both_phases()}))
    # the seeds' batch, two generations, then the pattern search's batches
    assert len(objective.batches) > 1 + 2


def test_pattern_rounds_within_budget_fill_what_the_evolution_leaves():
    settings = SearchSettings(population=13, generations=3, pattern_batch=16, max_evaluations=400)
    assert settings.pattern_rounds_within_budget() == -(-(400 - 52) // 16) == 22
    assert SearchSettings(population=13, generations=3, max_evaluations=30).pattern_rounds_within_budget() == 0


def test_the_search_offers_the_gluon_back_end_only_where_it_lowers_and_runs():
    import torch

    from build_tools.autotune.space import runnable_backends
    from kernels_src.attention import attention_fwd
    from tests.dsl.test_gluon_backend import attention_args

    spec = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, True)).config_spec
    offered = {k.name: k.choices for k in SearchSpace(spec).knobs}
    assert offered["backend"] == ("triton", "gluon") and offered["consumer_groups"] == (1, 2)
    assert runnable_backends("cpu") == ("triton",)
    cpu_space = SearchSpace(spec, runnable_backends("cpu"))
    assert {k.name: k.choices for k in cpu_space.knobs}["backend"] == ("triton",)
    point = SearchSpace(spec).encode({"backend": "gluon", "consumer_groups": 1, "block_sizes": [16, 64]})
    gluon = SearchSpace(spec).decode(point)
    assert gluon["backend"] == "gluon" and gluon["block_sizes"][0] == 64  # the row block of one warpgroup
    assert cpu_space.decode(cpu_space.encode(gluon)).get("backend", "triton") == "triton"
    fp32 = attention_fwd.bind(attention_args(1, 2, 1, 200, 300, 64, True, dtype=torch.float32)).config_spec
    assert "backend" not in {k.name for k in SearchSpace(fp32).knobs}
