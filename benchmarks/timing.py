"""Timers: CUDA-event medians with the L2 cache flushed before every run, and host-clock loop medians."""
from __future__ import annotations

import statistics
import time

import torch

FLUSH_BYTES = 256 << 20


class Timer:
    """Times callables on one device. `device_us` is the kernel time (median of CUDA events around
    each run, a 256 MB write flushing L2 before it); `host_us` is the per-call time of a loop of
    back-to-back calls ended by a synchronize (what a CPU-bound caller sees: launch overhead included)."""

    def __init__(self, device: torch.device, reps: int = 100, warmup: int = 10, seconds: float = 0.3):
        self.device = device
        self.cuda = device.type == "cuda"
        self.reps, self.warmup, self.seconds = reps, warmup, seconds
        self.flush = torch.empty(FLUSH_BYTES if self.cuda else 1 << 16, dtype=torch.uint8, device=device)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def _reps_for(self, fn) -> int:
        """Warm up, then pick a repetition count that keeps one measurement near `seconds`."""
        for _ in range(self.warmup):
            fn()
        self.sync()
        start = time.perf_counter()
        fn()
        self.sync()
        once = max(time.perf_counter() - start, 1e-6)
        return max(5, min(self.reps, int(self.seconds / once)))

    def device_us(self, fn) -> float:
        reps = self._reps_for(fn)
        if not self.cuda:
            times = []
            for _ in range(reps):
                self.flush.zero_()
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e6)
            return statistics.median(times)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for begin, end in zip(starts, ends):
            self.flush.zero_()
            begin.record()
            fn()
            end.record()
        self.sync()
        return statistics.median(b.elapsed_time(e) * 1e3 for b, e in zip(starts, ends))

    def host_us(self, fn, calls: int = 1000, rounds: int = 5) -> float:
        self._reps_for(fn)
        calls = calls if self.cuda else max(1, calls // 100)
        results = []
        for _ in range(rounds):
            self.sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            self.sync()
            results.append((time.perf_counter() - start) * 1e6 / calls)
        return statistics.median(results)
