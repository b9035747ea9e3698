"""Where candidates run: worker processes (the real thing) or the main process (tests, debugging).

A backend gives each entry a `bench` handle (`call(kind, *payload, timeout=...)`) and, for the
process backend, a compile pool; both are reused across the entries of a run.
"""
from __future__ import annotations

import multiprocessing
from dataclasses import replace

from build_tools.autotune.workers import EntrySetup, Worker, WorkerFailure, WorkerPool, build_bench


def _setup(backend, entry, seed: int, role: str = "bench") -> EntrySetup:
    return EntrySetup(
        backend.op_source, entry.op_name, entry.dtype_name, entry.shape, backend.device, backend.timer, seed, role
    )


class ProcessBackend:
    """A compile pool of `workers` processes, one benchmark process that is killed on a hang, and
    a peer process that compiles the next entry's torch.compile peer while this entry is tuned."""

    PEER_STALL_S = 600.0

    def __init__(self, workers: int, op_source: str, device: str, timer: str, prefetch_peers: bool = True):
        self.op_source, self.device, self.timer = op_source, device, timer
        context = multiprocessing.get_context("spawn")
        self.pool = WorkerPool(workers) if workers > 0 else None
        self.bench = Worker(context, "bench")
        self.peer = Worker(context, "peer") if prefetch_peers else None

    def start_entry(self, entry, seed: int = 0) -> None:
        setup = _setup(self, entry, seed)
        if self.pool is not None:
            self.pool.set_entry(replace(setup, role="compile"))
        self.bench.set_entry(setup)

    def prepare_next(self, entry, seed: int = 0) -> None:
        """Start compiling `entry`'s torch.compile peer in the background (best effort)."""
        if self.peer is None:
            return
        self.peer.drain()
        if self.peer.oldest_post_age() > self.PEER_STALL_S:
            self.peer.restart()
        self.peer.set_entry(_setup(self, entry, seed, role="compile"))
        self.peer.post("warm_baselines")

    def close(self) -> None:
        if self.pool is not None:
            self.pool.stop()
        self.bench.stop()
        if self.peer is not None:
            self.peer.stop()


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
        self.bench = InProcessWorker(build_bench(_setup(self, entry, seed)))

    def prepare_next(self, entry, seed: int = 0) -> None:
        """Nothing to prefetch without background processes."""

    def close(self) -> None:
        self.bench = None
