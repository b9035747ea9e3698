"""Measures candidates of one (op, dtype, shape) on one device, inside a worker process.

Holds the inputs, the float64 reference and the bound kernel; `warm` compiles a candidate
without running it (compile workers), `measure` gates a candidate on accuracy before timing it and
stops early when it is clearly slower than the best so far, `remeasure` times front runners
interleaved, `baselines` times the op's plain-PyTorch peer eagerly and under torch.compile.
Timing goes through an injected Timer.
"""
from __future__ import annotations

import math
import time

import torch

from build_tools.autotune.accuracy import mismatch
from build_tools.autotune.compile_only import compile_only
from build_tools.autotune.search import Outcome
from build_tools.autotune.space import config_key
from build_tools.autotune.timing import interleaved, median

EARLY_SAMPLES = 2     # samples taken before deciding whether a candidate deserves a full timing
SLOW_FACTOR = 2.0     # a candidate this many times slower than the best so far is timed no further
LOAD_SLACK_US = 20_000.0   # what a first call may add to the kernel (loading it from the cache)


def clone_args(args) -> tuple:
    """Fresh copies of the tensor arguments, so in-place kernels always see pristine inputs."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def bind_fresh(kernel, args):
    """Bind without the kernel's per-specialization cache, whose config space was derived from
    the sizes of whichever shape was bound first; each tuned shape needs its own."""
    reset = getattr(kernel, "reset", None)
    if reset is not None:
        reset()
    return kernel.bind(args)


def describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 500 else text[:500] + "..."


class EntryBench:
    def __init__(self, op, dtype, shape, device, timer, seed=0, with_reference=True):
        self.op = op
        self.device = device
        self.timer = timer
        self.args = op.make_inputs(shape, dtype, device, seed)
        self.bound = bind_fresh(op.kernel, self.args)
        self.rtol, self.atol = op.tolerance(dtype)
        self.expected = op.reference(*clone_args(self.args)) if with_reference else None
        self._compiled: dict[str, object] = {}

    def close(self) -> None:
        """Drop every tensor this entry holds (inputs, reference, compiled callables and the
        kernel's cached bound) so the memory can go back to the device."""
        reset = getattr(self.op.kernel, "reset", None)
        if reset is not None:
            reset()
        self.args, self.expected, self.bound = (), None, None
        self._compiled.clear()

    def ready(self) -> bool:
        """Answered once the entry is set up (a failed setup answers with its error instead)."""
        return True

    def synchronize(self) -> None:
        if str(self.device).startswith("cuda"):
            torch.cuda.synchronize()

    def compiled(self, config):
        key = config_key(config)
        if key not in self._compiled:
            self._compiled[key] = self.bound.compile_config(config)
        return self._compiled[key]

    def warm(self, config) -> None:
        """Compile without running (fills the on-disk Triton cache for the benchmark process)."""
        with compile_only():
            self.compiled(config)(*self.args)

    def check(self, config) -> str | None:
        """None when the candidate's output matches the reference, else the mismatch."""
        return self._checked_call(config)[0]

    def _checked_call(self, config) -> tuple[str | None, float]:
        """The mismatch (or None) and the host microseconds of the checked call, a rough upper
        bound of the kernel's time (it includes the launch and, the first time, the load)."""
        fn, args = self.compiled(config), clone_args(self.args)
        started = time.perf_counter()
        output = fn(*args)
        self.synchronize()
        elapsed_us = (time.perf_counter() - started) * 1e6
        return mismatch(output, self.expected, self.rtol, self.atol), elapsed_us

    def _timed_call(self, config):
        fn = self.compiled(config)
        args = self.args
        return lambda: fn(*args)

    def measure(self, config, best_us: float | None = None) -> Outcome:
        """Median microseconds of an accurate candidate; inf with the reason otherwise. A clearly
        slower candidate than `best_us` (by SLOW_FACTOR) keeps a rough time: its checked call's
        when that alone shows it (long kernels), else the median of its first samples."""
        try:
            wrong, elapsed_us = self._checked_call(config)
            if wrong is not None:
                return Outcome(math.inf, f"wrong output: {wrong}")
            if best_us is not None and elapsed_us > SLOW_FACTOR * best_us + LOAD_SLACK_US:
                return Outcome(elapsed_us)
            call = self._timed_call(config)
            first = self.timer.samples(call, EARLY_SAMPLES)
            if best_us is not None and median(first) > SLOW_FACTOR * best_us:
                return Outcome(median(first))
            return Outcome(median(first + self.timer.samples(call, self.timer.repeats_for(call))))
        except Exception as error:  # any failure of one candidate only rules that candidate out
            return Outcome(math.inf, describe(error))

    def remeasure(self, configs, rounds: int, per_round: int) -> list[dict]:
        """Per config: its per-round samples (interleaved with the others) or why it failed."""
        results: list[dict] = [{"samples": [], "error": None} for _ in configs]
        calls, owners = [], []
        for i, config in enumerate(configs):
            try:
                wrong = self.check(config)
            except Exception as error:
                wrong = describe(error)
            if wrong is not None:
                results[i]["error"] = wrong
            else:
                calls.append(self._timed_call(config))
                owners.append(i)
        for i, rounds_samples in zip(owners, interleaved(calls, self.timer, rounds, per_round)):
            results[i]["samples"] = rounds_samples
        return results

    def _compiled_baseline(self):
        """torch.compile of the baseline for this entry's shapes. Dynamo's in-memory caches are
        cleared first: a long-lived worker would otherwise hit the recompile limit after a few
        shapes and silently time eager code (Inductor's on-disk caches are kept)."""
        torch._dynamo.reset()
        return torch.compile(self.op.baseline, dynamic=False)

    def warm_baselines(self) -> None:
        """Compile the torch.compile peer once (fills Inductor's on-disk caches ahead of timing)."""
        if self.op.baseline is not None:
            self._compiled_baseline()(*self.args)
            self.synchronize()

    def baselines(self, with_compile: bool = True) -> dict:
        """Eager and torch.compile median microseconds of the op's baseline (None when absent,
        failing, or, for torch.compile, not asked for)."""
        baseline = self.op.baseline
        if baseline is None:
            return {"eager": None, "compile": None}
        peers = {"eager": baseline, "compile": self._compiled_baseline() if with_compile else None}
        result = {}
        for name, fn in peers.items():
            args = self.args
            call = lambda fn=fn: fn(*args)  # noqa: E731
            try:
                result[name] = median(self.timer.samples(call, self.timer.repeats_for(call))) if fn else None
            except Exception:  # a peer that cannot run on this input is simply not reported
                result[name] = None
        return result
