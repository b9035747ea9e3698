"""Timers: CUDA-event medians with the L2 cache flushed before every run, host-clock loop medians, and
per-call times of calls replayed from a CUDA graph."""
from __future__ import annotations

import statistics
import time

import torch

FLUSH_BYTES = 256 << 20
# GPU clock assumed when converting host seconds into `torch.cuda._sleep` cycles (H100/H200 boost
# clocks are ~1.98 GHz; a slower clock only makes the wait longer)
SLEEP_CYCLES_PER_S = 2.0e9
MAX_HOLD_S = 0.002


class Timer:
    """Times callables on one device. `device_us` is the kernel time (median of CUDA events around
    each run, a 256 MB write flushing L2 before it, then a GPU-side wait twice as long as the host
    takes to enqueue the run (at most `MAX_HOLD_S`), so that every launch of the run is queued before its start
    event: a host slower than the kernels, such as an autograd backward's, does not leave the GPU
    idle inside the timed region); `device_rounds` times several callables so, in alternating
    rounds; `host_us` is the per-call time of a loop of
    back-to-back calls ended by a synchronize (what a CPU-bound caller sees: launch overhead included);
    `graph_us` is the per-call time of back-to-back calls replayed from a CUDA graph (what a caller
    that captures its decode step sees: no host time, inputs left in L2 by the previous call)."""

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
        return statistics.median(self.device_rounds({"fn": fn}, rounds=1)["fn"])

    def device_rounds(self, fns: dict, rounds: int = 5) -> dict:
        """{name: µs of each timed run}: each callable's runs (as many as `device_us` would time, at
        least one per round) are split over `rounds` rounds taken in alternating order, so that drift
        over the measurement (clocks, temperature, the order of the callables) hits all alike."""
        plans = {}
        for name, fn in fns.items():
            reps = self._reps_for(fn)
            plans[name] = (-(-reps // rounds), self._hold_cycles(fn) if self.cuda else 0)
        results = {name: [] for name in fns}
        for round_index in range(rounds):
            names = list(fns) if round_index % 2 == 0 else list(reversed(fns))
            for name in names:
                reps, hold = plans[name]
                results[name].extend(self._timed_runs(fns[name], reps, hold))
        return results

    def _timed_runs(self, fn, reps: int, hold: int) -> list:
        """µs of `reps` runs of `fn`, L2 flushed before each; on a GPU, CUDA events around each run
        after a GPU-side wait of `hold` cycles, on the CPU the host clock."""
        if not self.cuda:
            times = []
            for _ in range(reps):
                self.flush.zero_()
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e6)
            return times
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for begin, end in zip(starts, ends):
            self.flush.zero_()
            torch.cuda._sleep(hold)
            begin.record()
            fn()
            end.record()
        self.sync()
        return [b.elapsed_time(e) * 1e3 for b, e in zip(starts, ends)]

    def _hold_cycles(self, fn) -> int:
        """GPU cycles to wait before a timed run: twice the longest of three host enqueue times of
        `fn`, each measured while the GPU is still busy (so no launch waits for it)."""
        enqueue = []
        for _ in range(3):
            torch.cuda._sleep(int(SLEEP_CYCLES_PER_S * MAX_HOLD_S))
            start = time.perf_counter()
            fn()
            enqueue.append(time.perf_counter() - start)
            self.sync()
        return int(SLEEP_CYCLES_PER_S * min(2 * max(enqueue), MAX_HOLD_S))

    def host_us(self, fn, calls: int = 1000, rounds: int = 5) -> float:
        return statistics.median(self.host_rounds({"fn": fn}, calls, rounds)["fn"])

    def host_rounds(self, fns: dict, calls: int = 1000, rounds: int = 5) -> dict:
        """{name: per-call µs of each round}: every round times a loop of `calls` calls of each
        callable, in alternating order, so host drift (clock, other processes) hits all alike and
        round-by-round differences compare like with like."""
        for fn in fns.values():
            self._reps_for(fn)
        calls = calls if self.cuda else max(1, calls // 100)
        results = {name: [] for name in fns}
        for round_index in range(rounds):
            names = list(fns) if round_index % 2 == 0 else list(reversed(fns))
            for name in names:
                fn = fns[name]
                self.sync()
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                self.sync()
                results[name].append((time.perf_counter() - start) * 1e6 / calls)
        return results

    def graph_us(self, fn, calls: int = 100, rounds: int = 20) -> float:
        """Median over `rounds` replays of a CUDA graph holding `calls` back-to-back calls of `fn`
        (warmed up on a side stream first, as capture requires), divided by `calls`. Without CUDA
        there is no graph to replay: the host-loop time stands in (the CPU dry run)."""
        if not self.cuda:
            return self.host_us(fn)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(self.warmup):
                fn()
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        graph.replay()
        self.sync()
        times = []
        for _ in range(rounds):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1e3 / calls)
        return statistics.median(times)
