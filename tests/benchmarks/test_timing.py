"""The benchmark timers on the CPU: host loops and timed runs of several callables alternate round by
round, and the dispatch bar reads the overhead from paired rounds."""
import torch

from benchmarks import bars
from benchmarks.timing import Timer


def test_host_rounds_alternate_and_time_every_callable():
    timer = Timer(torch.device("cpu"), reps=5, warmup=1, seconds=0.01)
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in ("a", "b", "c")}
    rounds = timer.host_rounds(fns, calls=100, rounds=4)
    assert set(rounds) == {"a", "b", "c"}
    assert all(len(times) == 4 and all(t > 0 for t in times) for times in rounds.values())
    # on the CPU a loop of 100 calls is one call, so the rounds' calls are the last 12
    assert order[-12:] == ["a", "b", "c", "c", "b", "a", "a", "b", "c", "c", "b", "a"]


def test_device_rounds_alternate_and_split_the_runs():
    timer = Timer(torch.device("cpu"), reps=6, warmup=1, seconds=10.0)
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in ("a", "b")}
    runs = timer.device_rounds(fns, rounds=3)
    # each callable's 6 runs, 2 a round, rounds in alternating order
    assert {name: len(times) for name, times in runs.items()} == {"a": 6, "b": 6}
    assert all(t > 0 for times in runs.values() for t in times)
    assert order[-12:] == ["a", "a", "b", "b", "b", "b", "a", "a", "a", "a", "b", "b"]
    assert timer.device_us(fns["a"]) > 0 and order[-6:] == ["a"] * 6


def test_graph_timing_without_cuda_is_the_host_loop():
    timer = Timer(torch.device("cpu"), reps=5, warmup=1, seconds=0.01)
    calls = []
    assert timer.graph_us(lambda: calls.append(1)) > 0
    assert calls


def _dispatch_records(api_us, launcher_us, overhead_us=None):
    api = {"op": "dispatch_softmax", "impl": "api", "status": "ok", "us": api_us}
    if overhead_us is not None:
        api["overhead_us"] = overhead_us
    return [api, {"op": "dispatch_softmax", "impl": "launcher", "status": "ok", "us": launcher_us}]


def test_dispatch_bar_reads_the_paired_overhead():
    assert bars._dispatch_bar(_dispatch_records(15.0, 12.0, overhead_us=1.5))["result"] == "met"
    assert bars._dispatch_bar(_dispatch_records(15.0, 14.0, overhead_us=2.5))["result"] == "missed"
    assert bars._dispatch_bar(_dispatch_records(15.0, 12.0))["result"] == "missed"   # 3 µs, unpaired
