"""Where candidates run: worker processes (the real thing) or the main process (tests, debugging).

A backend gives each entry a `bench` handle (`call(kind, *payload, timeout=...)`) and, for the
process backend, a compile pool; both are reused across the entries of a run (the worker
processes start once per run and only switch inputs between entries).
"""
from __future__ import annotations

import multiprocessing
import time
from dataclasses import replace

from build_tools.autotune.workers import EntrySetup, Worker, WorkerFailure, WorkerPool, build_bench


# Device memory of a compile worker per byte its entry moves (inputs and outputs, fp32 temporaries
# while the inputs are built: 5.6 GB per worker at softmax_bwd 16384x16384 bf16, which moves 1.5 GB,
# on an H100), plus its CUDA context and compiler; the benchmark and peer processes hold about as much
# again, and a fifth of the device stays free.
WORKER_BYTES_PER_ENTRY_BYTE = 4
WORKER_FIXED_BYTES = 1 << 30
FREE_FRACTION = 0.2


def compile_workers_for(entry_bytes: float, device_bytes: int, workers: int) -> int:
    """How many of `workers` compile workers may hold an entry that moves `entry_bytes` on a device
    of `device_bytes` (at least one)."""
    per_worker = WORKER_BYTES_PER_ENTRY_BYTE * entry_bytes + WORKER_FIXED_BYTES
    budget = (1 - FREE_FRACTION) * device_bytes - 2 * per_worker  # the benchmark and peer processes
    return max(1, min(workers, int(budget // per_worker)))


def _device_bytes(device: str) -> int | None:
    if not device.startswith("cuda"):
        return None
    import torch

    return torch.cuda.get_device_properties(torch.device(device)).total_memory


def _setup(backend, entry, seed: int, role: str = "bench") -> EntrySetup:
    return EntrySetup(
        backend.op_source, entry.op_name, entry.dtype_name, entry.shape, backend.device, backend.timer, seed, role
    )


class PeerPrefetch:
    """Compiles the torch.compile peers of the coming entries, `ahead` at a time, in a background
    worker, so that the benchmark worker's own torch.compile of an entry's peer finds Inductor's
    on-disk caches warm and takes a fraction of a second."""

    STALL_S = 300.0

    def __init__(self, worker: Worker, setup_of, ahead: int = 2):
        self.worker = worker
        self.setup_of = setup_of
        self.ahead = ahead
        self.queue: list = []
        self.inflight: dict[str, tuple[object, int, int]] = {}   # key -> (entry, request id, restarts)
        self.done: set[str] = set()

    def plan(self, entries) -> None:
        """Prefetch these entries, in this order (replaces any earlier plan)."""
        self.queue = [e for e in entries if e.key not in self.done]

    def refresh(self) -> None:
        """Collect finished prefetches and post the next ones."""
        worker = self.worker
        worker.drain()
        if worker.oldest_post_age() > self.STALL_S:
            worker.restart()
        lost = []
        for key, (entry, request_id, restarts) in list(self.inflight.items()):
            if worker.restarts != restarts:   # lost with the old process: post it again
                del self.inflight[key]
                lost.append(entry)
            elif request_id not in worker.posted:
                del self.inflight[key]
                self.done.add(key)
        self.queue[:0] = lost
        while self.queue and len(self.inflight) < self.ahead:
            entry = self.queue.pop(0)
            worker.set_entry(self.setup_of(entry))
            self.inflight[entry.key] = (entry, worker.post("warm_baselines"), worker.restarts)

    def wait(self, entry, timeout: float) -> bool:
        """True once `entry`'s peer is compiled (or its compile failed), False after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if entry.key in self.done:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


class ProcessBackend:
    """A compile pool of `workers` processes, one benchmark process that is killed on a hang, and
    a peer process that compiles the coming entries' torch.compile peers in the background. An
    entry too large for every compile worker to hold its inputs on the device gets fewer of them
    (`compile_workers_for`)."""

    def __init__(self, workers: int, op_source: str, device: str, timer: str, prefetch_peers: bool = True):
        self.op_source, self.device, self.timer = op_source, device, timer
        self.seed = 0
        context = multiprocessing.get_context("spawn")
        self.pool = WorkerPool(workers) if workers > 0 else None
        self.bench = Worker(context, "bench")
        self.peers = PeerPrefetch(Worker(context, "peer"), self._peer_setup) if prefetch_peers else None

    def _peer_setup(self, entry) -> EntrySetup:
        return _setup(self, entry, self.seed, role="compile")

    def plan(self, entries, seed: int = 0) -> None:
        """The entries this run will tune, in order (their peers are prefetched)."""
        self.seed = seed
        if self.peers is not None:
            self.peers.plan(entries)
            self.peers.refresh()

    def start_entry(self, entry, seed: int = 0) -> None:
        setup = _setup(self, entry, seed)
        if self.pool is not None:
            device_bytes = _device_bytes(self.device)
            active = None if device_bytes is None else compile_workers_for(
                entry.op.cost(entry.shape, entry.dtype)[1], device_bytes, len(self.pool.workers))
            self.pool.set_entry(replace(setup, role="compile"), active)
        self.bench.set_entry(setup)
        if self.peers is not None:
            self.peers.refresh()

    def wait_ready(self, timeout: float) -> None:
        """Wait (at most `timeout`) until every compile worker has set up the current entry."""
        if self.pool is not None:
            self.pool.wait_ready(timeout)

    def peer_ready(self, entry, timeout: float) -> bool:
        """Whether `entry`'s torch.compile peer is compiled, waiting at most `timeout` for it."""
        return self.peers is not None and self.peers.wait(entry, timeout)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.stop()
        self.bench.stop()
        if self.peers is not None:
            self.peers.worker.stop()


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

    def plan(self, entries, seed: int = 0) -> None:
        """Nothing to prefetch without background processes."""

    def start_entry(self, entry, seed: int = 0) -> None:
        self.bench = InProcessWorker(build_bench(_setup(self, entry, seed)))

    def wait_ready(self, timeout: float) -> None:
        """Set up as soon as started."""

    def peer_ready(self, entry, timeout: float) -> bool:
        """The benchmark compiles the peer itself, in this process."""
        return True

    def close(self) -> None:
        self.bench = None
