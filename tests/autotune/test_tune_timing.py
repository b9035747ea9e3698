"""Timing statistics and interleaved measurement with a scripted timer."""
from build_tools.autotune.timing import interleaved, median, relative_spread


class ScriptedTimer:
    """Returns the callable's own scripted value and records the order of measurement."""

    def __init__(self):
        self.order = []

    def samples(self, fn, repeats):
        self.order.append(fn.__name__)
        return [fn() for _ in range(repeats)]


def test_median_and_spread():
    assert median([5.0, 1.0, 3.0]) == 3.0
    assert relative_spread([9.0, 10.0, 11.0]) == 0.2
    assert relative_spread([10.0]) == 0.0


def test_interleaved_alternates_order_and_keeps_rounds_apart():
    def a():
        return 1.0

    def b():
        return 2.0

    timer = ScriptedTimer()
    samples = interleaved([a, b], timer, rounds=3, per_round=4)
    assert timer.order == ["a", "b", "b", "a", "a", "b"]
    assert [len(r) for r in samples[0]] == [4, 4, 4]
    assert samples[1][2] == [2.0] * 4
