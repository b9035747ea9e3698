"""EntryBench in-process on a fake op: accuracy gate, failures, re-benchmark and peers."""
import math

import torch
from autotune_fakes import VIRTUAL_CLOCK, FakeConfigSpec, VirtualTimer, bowl_cost, make_fake_op

from build_tools.autotune.bench import EntryBench


def config(warps=4, stages=2, indexing="pointer"):
    return {"block_sizes": [64, 32], "num_warps": warps, "num_stages": stages, "indexing": indexing}


def hazard(cfg):
    return {8: "wrong", 1: "raise", 2: "compile_error", 16: "slow"}.get(cfg["num_warps"])


def peer(x):
    VIRTUAL_CLOCK["us"] += 50.0
    return x * 2


def bench(baseline=None):
    op = make_fake_op("bench_op", hazard=hazard)
    if baseline is not None:
        import dataclasses

        op = dataclasses.replace(op, baseline=baseline)
    return EntryBench(op, torch.float32, {"N": 32}, "cpu", VirtualTimer())


def test_measure_times_accurate_configs_and_rejects_the_rest():
    b = bench()
    good = b.measure(config())
    assert good.error is None and good.us == bowl_cost(FakeConfigSpec(), FakeConfigSpec().normalize(config()))
    wrong = b.measure(config(warps=8))
    assert math.isinf(wrong.us) and wrong.error.startswith("wrong output")
    assert "fake launch failure" in b.measure(config(warps=1)).error
    assert "fake compile error" in b.measure(config(warps=2)).error


def test_remeasure_interleaves_rounds_and_reports_failures():
    b = bench()
    results = b.remeasure([config(), config(warps=8), config(stages=3)], rounds=3, per_round=2)
    assert [len(r["samples"]) for r in results] == [3, 0, 3]
    assert all(len(s) == 2 for s in results[0]["samples"])
    assert "elements off" in results[1]["error"]
    assert results[2]["samples"][0][0] != results[0]["samples"][0][0]


def test_baselines_time_eager_and_compiled_peers(monkeypatch):
    compiled = []

    def fake_compile(fn, dynamic):
        compiled.append(dynamic)
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    assert bench(baseline=peer).baselines() == {"eager": 50.0, "compile": 50.0}
    assert compiled == [False]
    assert bench().baselines() == {"eager": None, "compile": None}


class CountingTimer(VirtualTimer):
    def __init__(self):
        self.samples_taken = 0

    def samples(self, fn, repeats):
        self.samples_taken += repeats
        return super().samples(fn, repeats)


def test_a_clearly_losing_candidate_is_not_timed_further():
    from build_tools.autotune.bench import EARLY_SAMPLES, SLOW_FACTOR

    b = bench()
    b.timer = CountingTimer()
    us = b.measure(config()).us
    full = b.timer.samples_taken
    b.timer.samples_taken = 0
    slow = b.measure(config(), best_us=us / (SLOW_FACTOR * 1.01))
    assert slow.us == us and b.timer.samples_taken == EARLY_SAMPLES < full
    b.timer.samples_taken = 0
    assert b.measure(config(), best_us=us / SLOW_FACTOR).us == us and b.timer.samples_taken == full


def test_baselines_without_the_compiled_peer(monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda fn, dynamic: (_ for _ in ()).throw(AssertionError("compiled")))
    assert bench(baseline=peer).baselines(with_compile=False) == {"eager": 50.0, "compile": None}


def test_a_candidate_whose_checked_call_alone_is_too_slow_is_not_timed():
    b = bench()
    b.timer = CountingTimer()
    slow = b.measure(config(warps=16), best_us=1.0)
    assert slow.error is None and slow.us >= 50_000 and b.timer.samples_taken == 0
    assert b.measure(config(warps=16)).us == bowl_cost(FakeConfigSpec(), FakeConfigSpec().normalize(config(warps=16)))


def test_close_lets_every_tensor_of_the_entry_go():
    import gc
    import weakref

    b = bench()
    b.measure(config())
    expected = b.expected if isinstance(b.expected, (tuple, list)) else (b.expected,)
    held = [weakref.ref(t) for t in (*b.args, *expected) if isinstance(t, torch.Tensor)]
    del expected
    assert held and all(r() is not None for r in held)
    b.close()
    gc.collect()
    assert all(r() is None for r in held)
