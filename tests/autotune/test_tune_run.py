"""Whole-run behaviour on fake ops in-process: table, skipping failures, budget and resumption."""
import itertools
import json
import math

import pytest
from autotune_fakes import FAKE_OPS, FAKE_OPS_SOURCE, VIRTUAL_TIMER, FakeConfigSpec, StepClock, bowl_cost

from build_tools.autotune.backend import InProcessBackend
from build_tools.autotune.entry import Limits
from build_tools.autotune.plan import plan_entries
from build_tools.autotune.run import MAX_ATTEMPTS, MIN_SEARCH_S, RunOptions, Tuner
from build_tools.autotune.search import SearchSettings
from build_tools.autotune.space import SearchSpace
from helion_kernels._variant import variant_id


def best_possible_cost():
    spec = FakeConfigSpec()
    space = SearchSpace(spec)
    costs = []
    for point in itertools.product(*(range(n) for n in space.sizes)):
        config = space.decode(point)
        if config is not None:
            costs.append(bowl_cost(spec, config))
    return min(costs)


class CountingBackend(InProcessBackend):
    def __init__(self):
        super().__init__(FAKE_OPS_SOURCE, "cpu", VIRTUAL_TIMER)
        self.started = []

    def start_entry(self, entry, seed=0):
        self.started.append(entry.key)
        super().start_entry(entry, seed)


def options(tmp_path, **overrides):
    base = dict(
        arch="test_arch", out_path=tmp_path / "tuned" / "test_arch.json", work_dir=tmp_path / "work",
        device="cpu", device_name="fake", with_baselines=False,
        settings=SearchSettings(population=8, generations=4, pattern_rounds=6, max_evaluations=150),
        limits=Limits(finalists=2, rounds=2, per_round=2),
    )
    base.update(overrides)
    return RunOptions(**base)


def run(opts, only_ops, clock=None, backend=None):
    backend = backend or CountingBackend()
    entries = plan_entries(FAKE_OPS, only_ops)
    tuner = Tuner(opts, entries, backend, **({"clock": clock} if clock else {}))
    return tuner.run(), backend


def test_run_writes_the_table_with_the_contract_fields(tmp_path):
    summary, _ = run(options(tmp_path), {"fake_scale"})
    table = json.loads((tmp_path / "tuned" / "test_arch.json").read_text())
    assert table["schema"] == 1 and table["arch"] == "test_arch" and table["device_name"] == "fake"
    assert {"torch", "triton", "tuned_at"} <= table.keys()
    assert len(table["entries"]) == 3 == len(summary.finished)
    best = best_possible_cost()
    for entry in table["entries"]:
        assert entry["variant"] == variant_id(entry["op"], entry["config"], entry["specialization"])
        assert entry["us"] == best == bowl_cost(FakeConfigSpec(), entry["config"])
        assert entry["baseline_us"] == {"eager": None, "compile": None}
    report = (tmp_path / "work" / "tune-report.md").read_text()
    assert report.count("| fake_scale |") == 3


def test_a_failing_entry_is_logged_and_skipped(tmp_path):
    summary, _ = run(options(tmp_path), {"fake_broken_shape"})
    assert len(summary.failed) == 1 and "N=13" in next(iter(summary.failed.values()))
    assert len(summary.finished) == 1
    table = json.loads((tmp_path / "tuned" / "test_arch.json").read_text())
    assert [e["shape"] for e in table["entries"]] == [{"N": 32}]
    assert "N=13" in (tmp_path / "work" / "tune.log").read_text()


def test_failed_entries_are_retried_on_resume_then_given_up(tmp_path):
    opts = options(tmp_path, resume=True)
    summary, backend = run(opts, {"fake_broken_shape"})
    assert len(backend.started) == 2
    for _ in range(MAX_ATTEMPTS - 1):
        summary, backend = run(opts, {"fake_broken_shape"})
        assert len(backend.started) == 1  # only the broken entry is attempted again
    summary, backend = run(opts, {"fake_broken_shape"})
    assert backend.started == [] and len(summary.skipped) == 1


def test_budget_stops_cleanly_and_resume_finishes_the_rest(tmp_path):
    # Every clock read advances 1 s; a budget this small ends the run after some entries.
    opts = options(tmp_path, budget_s=30)
    first, backend = run(opts, {"fake_scale"}, clock=StepClock(step=1.0))
    assert first.stopped_for_budget
    assert 1 <= len(first.finished) < 3
    table = json.loads(opts.out_path.read_text())
    assert len(table["entries"]) == len(first.finished)

    resumed = options(tmp_path, resume=True)
    second, backend = run(resumed, {"fake_scale"})
    assert not set(backend.started) & set(first.finished)
    assert len(first.finished) + len(second.finished) == 3
    assert len(json.loads(opts.out_path.read_text())["entries"]) == 3


def test_without_resume_the_state_starts_over_but_the_table_keeps_other_entries(tmp_path):
    run(options(tmp_path), {"fake_broken_shape"})
    summary, backend = run(options(tmp_path), {"fake_scale"})
    assert len(backend.started) == 3
    ops = {e["op"] for e in json.loads((tmp_path / "tuned" / "test_arch.json").read_text())["entries"]}
    assert ops == {"fake_scale", "fake_broken_shape"}


def test_neighbour_winners_seed_the_next_shape(tmp_path):
    summary, _ = run(options(tmp_path), {"fake_scale"})
    records = list(summary.records.values())
    # Seeded with the first shape's optimum, later shapes find it in their first batch.
    later = [r for r in records if r["shape"] != {"N": 64}]
    assert all(r["us"] == best_possible_cost() for r in later)
    assert all(r["tuning"]["tried"] <= records[0]["tuning"]["tried"] for r in later)


def test_incumbents_are_remeasured_side_by_side(tmp_path):
    shipped = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    from build_tools.autotune.table import entry_key

    key = entry_key("fake_scale", "float32", {"N": 64})
    summary, _ = run(options(tmp_path, incumbents={key: shipped}), {"fake_scale"})
    incumbent = summary.records[key]["tuning"]["incumbent"]
    assert incumbent["config"] == FakeConfigSpec().normalize(shipped)
    assert incumbent["us"] == bowl_cost(FakeConfigSpec(), shipped)
    assert incumbent["error"] is None and math.isfinite(incumbent["us"])
    assert "incumbent" not in summary.records[next(k for k in summary.records if k != key)]["tuning"]


@pytest.mark.parametrize("strategy", ["de", "random"])
def test_strategies_both_produce_a_table(tmp_path, strategy):
    opts = options(tmp_path, settings=SearchSettings(strategy=strategy, max_evaluations=20))
    summary, _ = run(opts, {"fake_scale"})
    assert len(summary.finished) == 3
    assert all(r["tuning"]["tried"] <= 20 for r in summary.records.values())


def test_target_total_is_spread_over_the_entries(tmp_path):
    opts = options(tmp_path, target_total_s=60, settings=SearchSettings(generations=50, pattern_rounds=50,
                                                                        max_evaluations=10_000, time_limit_s=1000))
    summary, _ = run(opts, {"fake_scale"}, clock=StepClock(step=1.0))
    assert len(summary.finished) == 3
    search = [r["tuning"]["search"] for r in summary.records.values()]
    assert all(s <= 60 / 3 + 5 for s in search)  # a batch started before the limit may finish after it
    assert sum(r["tuning"]["wall"] for r in summary.records.values()) <= 60 + 15


def test_failure_reasons_are_one_line():
    from build_tools.autotune.run import one_line

    traceback_text = 'setup failed: Traceback (most recent call last):\n  File "x.py"\nRuntimeError: N=13\n'
    assert one_line(traceback_text) == "RuntimeError: N=13"


def test_entries_the_budget_cannot_fit_are_not_run_rather_than_failed(tmp_path):
    opts = options(tmp_path, budget_s=30)
    summary, backend = run(opts, {"fake_scale"}, clock=StepClock(step=1.0))
    assert summary.stopped_for_budget and not summary.failed
    assert summary.not_run and len(summary.not_run) + len(summary.finished) == 3
    state = json.loads((tmp_path / "work" / "state.json").read_text())
    assert state["failed"] == {}
    log = (tmp_path / "work" / "tune.log").read_text()
    assert "no legal config" not in log and "failed:" not in log
    assert f"{len(summary.not_run)} entries not run" in log
    assert (tmp_path / "work" / "tune-report.md").read_text().count("not run (budget)") == len(summary.not_run)


def test_a_spent_target_total_still_gives_each_entry_a_minimal_search(tmp_path):
    opts = options(tmp_path, target_total_s=1, settings=SearchSettings(max_evaluations=10_000, time_limit_s=1000))
    summary, _ = run(opts, {"fake_scale"}, clock=StepClock(step=1.0))
    assert len(summary.finished) == 3 and not summary.failed
    assert all(1 <= r["tuning"]["tried"] and r["tuning"]["search"] <= MIN_SEARCH_S + 8
               for r in summary.records.values())


def test_resumed_runs_share_the_target_total_through_the_recorded_wall_time(tmp_path):
    opts = options(tmp_path, resume=True, target_total_s=100,
                   settings=SearchSettings(max_evaluations=10_000, time_limit_s=1000))
    tuner = Tuner(opts, plan_entries(FAKE_OPS, {"fake_scale"}), CountingBackend(), clock=StepClock(step=0.0))
    assert tuner._entry_time_limit(0.0) == 100 / 3 - 2.0   # no entry measured yet: assumed overhead
    key = tuner.entries[0].key
    tuner.state.mark_finished(key, {"op": "fake_scale", "tuning": {"wall": 30.0, "search": 26.0}})
    tuner.state.add_spent(30.0)
    tuner.state.add_spent(10.0)   # a failed attempt costs time too
    again = Tuner(opts, plan_entries(FAKE_OPS, {"fake_scale"}), CountingBackend(), clock=StepClock(step=0.0))
    assert again._entry_time_limit(0.0) == (100 - 40) / 2 - 4.0


class NoPeerBackend(CountingBackend):
    """A backend whose torch.compile peers are never compiled in time."""

    def peer_ready(self, entry, timeout):
        return False


def test_a_peer_not_compiled_in_time_is_skipped_with_a_note_in_the_table(tmp_path, monkeypatch):
    import dataclasses

    import autotune_fakes

    op = dataclasses.replace(FAKE_OPS[0], name="fake_peer", shapes=[{"N": 64}], baseline=lambda x: x * 2)
    monkeypatch.setattr(autotune_fakes, "FAKE_OPS", [op])
    opts = options(tmp_path, with_baselines=True)
    tuner = Tuner(opts, plan_entries([op]), NoPeerBackend())
    summary = tuner.run()
    [entry] = json.loads(opts.out_path.read_text())["entries"]
    assert entry["baseline_us"]["compile"] is None and entry["baseline_us"]["eager"] is not None
    assert entry["baseline_notes"]["compile"].startswith("skipped")
    assert "| skipped |" in (tmp_path / "work" / "tune-report.md").read_text()
    assert summary.finished


def test_seed_tables_start_the_search_of_the_nearest_shapes(tmp_path):
    best = FakeConfigSpec().unflatten([choices[i] for choices, i in zip(
        [k.choices for k in FakeConfigSpec.KNOBS], (3, 1, 3, 2, 1))])
    seeds = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 100}, "config": best}]
    opts = options(tmp_path, seed_entries=seeds, settings=SearchSettings(population=4, generations=0,
                                                                          pattern_rounds=0, max_evaluations=4))
    summary, _ = run(opts, {"fake_scale"})
    assert all(r["us"] == best_possible_cost() == bowl_cost(FakeConfigSpec(), r["config"])
               for r in summary.records.values())


def test_other_devices_configs_start_the_search_but_are_not_incumbents(tmp_path):
    """A retune's searches also start from the nearest config of the entries that the device's own
    table hides in the architecture's other tables; the incumbent stays what ships on the device."""
    spec = FakeConfigSpec()
    best = spec.unflatten([choices[i] for choices, i in zip([k.choices for k in FakeConfigSpec.KNOBS], (3, 1, 3, 2, 1))])
    slow = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    shipped = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 100}, "config": slow}]
    other = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 100}, "config": best}]
    settings = SearchSettings(population=4, generations=0, pattern_rounds=0, max_evaluations=4)
    summary, _ = run(options(tmp_path, arch_entries=shipped, other_device_entries=other, settings=settings),
                     {"fake_scale"})
    assert all(r["us"] == best_possible_cost() and r["tuning"]["incumbent"]["config"] == spec.normalize(slow)
               for r in summary.records.values())
    unseeded, _ = run(options(tmp_path / "unseeded", arch_entries=shipped, settings=settings), {"fake_scale"})
    assert any(r["us"] > best_possible_cost() for r in unseeded.records.values())


def test_the_default_tables_nearest_entry_is_the_incumbent_of_a_tune(tmp_path):
    spec = FakeConfigSpec()
    untuned = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    other = {"block_sizes": [32, 16], "num_warps": 2, "num_stages": 1, "indexing": "pointer"}
    seeds = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 50}, "config": untuned},
             {"op": "fake_scale", "dtype": "float32", "shape": {"N": 2048}, "config": other},
             {"op": "fake_scale", "dtype": "float16", "shape": {"N": 64}, "config": other}]
    summary, _ = run(options(tmp_path, seed_entries=seeds), {"fake_scale"})
    by_n = {r["shape"]["N"]: r["tuning"]["incumbent"] for r in summary.records.values()}
    assert by_n[64]["config"] == by_n[256]["config"] == spec.normalize(untuned)
    assert by_n[1024]["config"] == spec.normalize(other)
    assert all(i["us"] == bowl_cost(spec, i["config"]) for i in by_n.values())


def test_the_arch_tables_nearest_entry_comes_before_the_default_tables(tmp_path):
    """On a device whose arch table belongs to another device, that table ships before the default."""
    spec = FakeConfigSpec()
    default = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    arch = {"block_sizes": [32, 16], "num_warps": 2, "num_stages": 1, "indexing": "pointer"}
    seeds = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 64}, "config": default}]
    arch_entries = [{"op": "fake_scale", "dtype": "float32", "shape": {"N": 4096}, "config": arch}]
    summary, _ = run(options(tmp_path, seed_entries=seeds, arch_entries=arch_entries), {"fake_scale"})
    incumbents = [r["tuning"]["incumbent"]["config"] for r in summary.records.values()]
    assert len(incumbents) == 3 and all(config == spec.normalize(arch) for config in incumbents)
