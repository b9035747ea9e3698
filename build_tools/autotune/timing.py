"""Timing sources behind one small interface, plus the statistics the tuner reads from samples.

A timer turns a zero-argument callable into a list of per-call times in microseconds. The CUDA
timer warms up, flushes L2 before each sample and reads CUDA events; the CPU timer exists for
the interpreter smoke run. Tests inject their own timers, so nothing here is timed in tests.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Protocol, Sequence


class Timer(Protocol):
    def samples(self, fn: Callable[[], object], repeats: int) -> list[float]: ...

    def repeats_for(self, fn: Callable[[], object]) -> int: ...


class CudaEventTimer:
    """Median-ready samples: warm-up calls, L2 flushed before every timed call, CUDA events."""

    def __init__(self, warmup: int = 3, flush_bytes: int = 256 << 20, target_ms: float = 15.0):
        import torch

        self.torch = torch
        self.warmup = warmup
        self.target_ms = target_ms
        self.flush_buffer = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")

    def samples(self, fn, repeats: int) -> list[float]:
        torch = self.torch
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(repeats)
        ]
        for start, end in events:
            self.flush_buffer.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) * 1000.0 for start, end in events]

    def repeats_for(self, fn, minimum: int = 5, maximum: int = 50) -> int:
        """How many samples fit the target time, from one flushed probe call."""
        probe = self.samples(fn, 1)[0]
        return int(min(max(self.target_ms * 1000.0 / max(probe, 1.0), minimum), maximum))


class CpuTimer:
    """Wall-clock samples on the host, for the CPU/interpreter smoke run only."""

    def __init__(self, warmup: int = 1):
        self.warmup = warmup

    def samples(self, fn, repeats: int) -> list[float]:
        for _ in range(self.warmup):
            fn()
        result = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            result.append((time.perf_counter() - start) * 1e6)
        return result

    def repeats_for(self, fn, minimum: int = 1, maximum: int = 3) -> int:
        return minimum


def median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def relative_spread(round_medians: Sequence[float]) -> float:
    """(max - min) / median of per-round medians: the noise of a config's measurement."""
    if len(round_medians) < 2:
        return 0.0
    mid = median(round_medians)
    return (max(round_medians) - min(round_medians)) / mid if mid > 0 else 0.0


def interleaved(fns: Sequence[Callable[[], object]], timer: Timer, rounds: int, per_round: int):
    """Samples of several callables measured in alternation, so drift hits all of them alike.

    Returns, per callable, its list of per-round sample lists.
    """
    result: list[list[list[float]]] = [[] for _ in fns]
    for r in range(rounds):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            result[i].append(timer.samples(fns[i], per_round))
    return result
