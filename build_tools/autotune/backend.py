"""Where candidates run: worker processes (the real thing) or the main process (tests, debugging).

A backend gives each entry a `bench` handle (`call(kind, *payload, timeout=...)`) and, for the
process backend, a compile pool; both are reused across the entries of a run.
"""
from __future__ import annotations

import multiprocessing
from dataclasses import replace

from build_tools.autotune.workers import EntrySetup, Worker, WorkerFailure, WorkerPool, build_bench


class ProcessBackend:
    """A compile pool of `workers` processes plus one benchmark process that is killed on a hang."""

    def __init__(self, workers: int, op_source: str, device: str, timer: str):
        self.op_source, self.device, self.timer = op_source, device, timer
        self.pool = WorkerPool(workers) if workers > 0 else None
        self.bench = Worker(multiprocessing.get_context("spawn"), "bench")

    def start_entry(self, entry, seed: int = 0) -> None:
        setup = EntrySetup(
            self.op_source, entry.op_name, entry.dtype_name, entry.shape, self.device, self.timer, seed
        )
        if self.pool is not None:
            self.pool.set_entry(replace(setup, role="compile"))
        self.bench.set_entry(setup)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.stop()
        self.bench.stop()


class InProcessWorker:
    """The benchmark worker's interface over an EntryBench in this process (no timeouts)."""

    def __init__(self, bench):
        self.bench = bench

    def call(self, kind: str, *payload, timeout: float = 0.0, setup_timeout: float = 0.0):
        try:
            return getattr(self.bench, kind)(*payload)
        except Exception as error:
            raise WorkerFailure(f"{kind}: {type(error).__name__}: {error}") from error


class InProcessBackend:
    """Everything in the main process: no parallel compile, no protection against hangs."""

    pool = None

    def __init__(self, op_source: str, device: str, timer: str):
        self.op_source, self.device, self.timer = op_source, device, timer
        self.bench = None

    def start_entry(self, entry, seed: int = 0) -> None:
        setup = EntrySetup(
            self.op_source, entry.op_name, entry.dtype_name, entry.shape, self.device, self.timer, seed
        )
        self.bench = InProcessWorker(build_bench(setup))

    def close(self) -> None:
        self.bench = None
