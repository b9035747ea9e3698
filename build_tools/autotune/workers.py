"""Worker processes: a pool that compiles candidates in parallel and a killable benchmark process.

Each worker holds an `EntryBench` for the current (op, dtype, shape). Requests and replies carry
a sequence id so replies of a killed or abandoned request are never mistaken for new ones. A
request that runs past its timeout (hung compile or kernel) gets its worker killed and restarted;
a worker that dies (segfault, poisoned CUDA context) is restarted too. Neither stops a search.
"""
from __future__ import annotations

import gc
import importlib
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import statistics
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator


def resolve(path: str):
    """Object named by "package.module:attribute"."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class EntrySetup:
    """Everything a worker needs to rebuild the inputs of one entry (plain data, picklable)."""

    op_source: str          # "kernels_src:ALL_OPS", or a test's list of fake ops
    op: str
    dtype: str              # torch dtype name, e.g. "bfloat16"
    shape: dict
    device: str
    timer: str              # "module:factory" of the Timer to build in the worker
    seed: int = 0
    role: str = "bench"     # "bench": reference + timer; "compile": inputs and kernel only


def build_bench(setup: EntrySetup):
    import torch

    from build_tools.autotune.bench import EntryBench

    op = next(o for o in resolve(setup.op_source) if o.name == setup.op)
    benchmarking = setup.role == "bench"
    timer = resolve(setup.timer)() if benchmarking else None
    dtype = getattr(torch, setup.dtype)
    return EntryBench(op, dtype, setup.shape, setup.device, timer, setup.seed, with_reference=benchmarking)


def _device_healthy(device: str) -> bool:
    if not device.startswith("cuda"):
        return True
    import torch

    try:
        torch.cuda.synchronize()
        return True
    except Exception:
        return False


def _release_memory(device: str) -> None:
    """Collect garbage and hand the caching allocator's free blocks back to the device."""
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def worker_main(conn) -> None:
    """Loop of a worker process: ("setup", EntrySetup) then method calls on its EntryBench."""
    bench, setup_error, device = None, "no entry set up", "cpu"
    while True:
        try:
            request_id, kind, payload = conn.recv()
        except EOFError:
            return
        if kind == "stop":
            return
        if kind == "setup":
            if bench is not None:  # free the last entry's tensors before allocating the next's
                bench.close()
                bench = None
            _release_memory(device)
            device = payload.device
            try:
                bench, setup_error = build_bench(payload), None
            except Exception:
                bench, setup_error = None, traceback.format_exc(limit=4)
            _release_memory(device)  # the setup's temporaries (inputs built in fp32, the reference's)
            conn.send((request_id, "setup", setup_error))
            if not _device_healthy(device):
                os._exit(3)
            continue
        if bench is None:
            conn.send((request_id, "error", f"setup failed: {setup_error}"))
            continue
        try:
            conn.send((request_id, "ok", getattr(bench, kind)(*payload)))
        except Exception:
            conn.send((request_id, "error", traceback.format_exc(limit=4)))
        if not _device_healthy(device):
            os._exit(3)


class WorkerFailure(Exception):
    """A request timed out or its worker died; the worker has been restarted."""


_request_ids = itertools.count(1)


class Worker:
    """Main-process handle of one worker process."""

    def __init__(self, context, name: str):
        self.context = context
        self.name = name
        self.process = None
        self.conn = None
        self.setup: EntrySetup | None = None
        self.setup_id = None
        self.ready = False
        self.restarts = 0
        self.posted: dict[int, float] = {}
        self.abandoned: tuple[int, float] | None = None   # (request id, when) of a reply nobody wants

    def start(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=worker_main, args=(child,), name=self.name, daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.ready = False
        if self.setup is not None:
            self._send_setup()

    def _send_setup(self) -> None:
        self.setup_id = next(_request_ids)
        self.ready = False
        self.conn.send((self.setup_id, "setup", self.setup))

    def set_entry(self, setup: EntrySetup) -> None:
        self.setup = setup
        if self.process is None or not self.process.is_alive():
            self.start()
        else:
            self._send_setup()

    def send(self, kind: str, *payload) -> int:
        if self.process is None or not self.process.is_alive():
            self.restart()
        request_id = next(_request_ids)
        try:
            self.conn.send((request_id, kind, payload))
        except (OSError, EOFError):  # died since the check: one fresh process, one more try
            self.restart()
            self.conn.send((request_id, kind, payload))
        return request_id

    def receive(self):
        """The next reply, or None for a setup reply (which marks the worker ready)."""
        request_id, status, value = self.conn.recv()
        if status == "setup":
            if request_id == self.setup_id:
                self.ready = True
            return None
        return request_id, status, value

    def post(self, kind: str, *payload) -> int:
        """Send a request whose reply nobody waits for (background work such as prefetching);
        its id stays in `posted` until its reply has been drained."""
        self.drain()
        request_id = self.send(kind, *payload)
        self.posted[request_id] = time.monotonic()
        return request_id

    def drain(self) -> None:
        """Read every reply already waiting, forgetting the posted requests they answer."""
        try:
            while self.conn is not None and self.conn.poll(0):
                reply = self.receive()
                if reply is not None:
                    self.posted.pop(reply[0], None)
        except (EOFError, OSError):
            self.posted.clear()

    def oldest_post_age(self) -> float:
        return time.monotonic() - min(self.posted.values()) if self.posted else 0.0

    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def kill(self) -> None:
        """SIGKILL without waiting long for the exit (a process holding a CUDA context can take
        seconds to be torn down; multiprocessing reaps it later)."""
        if self.process is not None:
            self.process.kill()
            self.process.join(timeout=0.5)
            self.conn.close()
        self.process = None

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.posted.clear()
        self.abandoned = None
        self.start()

    def abandon(self, request_id: int) -> None:
        """Stop waiting for a request's reply but let the worker finish it (cheaper than a kill
        and a restart; a compile finished this way still lands in the on-disk cache)."""
        self.abandoned = (request_id, time.monotonic())

    def settle(self, limit_s: float) -> None:
        """Read the replies already waiting (non-blocking): a setup's marks the worker ready, an
        abandoned request's frees it. A worker still on an abandoned request after `limit_s` is
        restarted."""
        try:
            while self.alive() and self.conn.poll(0):
                reply = self.receive()
                if reply is not None and self.abandoned is not None and reply[0] == self.abandoned[0]:
                    self.abandoned = None
        except (EOFError, OSError):
            return
        if self.abandoned is not None and time.monotonic() - self.abandoned[1] > limit_s:
            self.restart()

    def stop(self) -> None:
        if self.alive():
            try:
                self.conn.send((0, "stop", ()))
                self.process.join(timeout=5)
            except (OSError, EOFError):
                pass
        self.kill()

    def call(self, kind: str, *payload, timeout: float, setup_timeout: float = 300.0):
        """Run one request and return its value; WorkerFailure on timeout, death or error."""
        request_id = self.send(kind, *payload)
        deadline = time.monotonic() + timeout + (0 if self.ready else setup_timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.restart()
                raise WorkerFailure(f"{kind} timed out after {timeout:.0f}s")
            try:
                has_reply = self.conn.poll(min(remaining, 0.5))
                reply = self.receive() if has_reply else None
            except (EOFError, OSError):
                has_reply, reply = False, None
                self.process.join(timeout=5)
            if has_reply and reply is None and self.ready:
                deadline = time.monotonic() + timeout
            if reply is not None and reply[0] == request_id:
                if reply[1] == "error":
                    raise WorkerFailure(reply[2])
                return reply[2]
            if not has_reply and not self.alive():
                code = self.process.exitcode if self.process else None
                self.restart()
                raise WorkerFailure(f"worker died (exit code {code}) during {kind}")


SKIPPED = "skipped: the entry's time ran out"


@dataclass(frozen=True)
class Deadlines:
    """When a pool run stops waiting. `deadline()` is an absolute time.monotonic() (or None for
    none) read on every loop, so the caller can lift it until some candidate has succeeded.
    A straggler, running while nothing else is left to hand out, is cut once it has run
    `straggler_factor` times the median duration of the requests finished in this run, and at
    least `straggler_min_s`."""

    deadline: Callable[[], float | None] = lambda: None
    straggler_factor: float = 4.0
    straggler_min_s: float = 4.0

    def straggler_limit(self, durations: list) -> float:
        if not durations:
            return math.inf
        return max(self.straggler_min_s, self.straggler_factor * statistics.median(durations))


class WorkerPool:
    """Several workers running one kind of request over a list of payloads in parallel."""

    def __init__(self, size: int, name: str = "compile"):
        context = multiprocessing.get_context("spawn")
        self.workers = [Worker(context, f"{name}-{i}") for i in range(size)]
        self.active = list(self.workers)

    def set_entry(self, setup: EntrySetup, active: int | None = None) -> None:
        """Set up the entry on the first `active` workers (all by default, at least one); the others
        are stopped, which frees their memory (an entry's inputs on the GPU), and get no work until
        an entry lets them in again."""
        count = len(self.workers) if active is None else max(1, min(active, len(self.workers)))
        self.active = self.workers[:count]
        for worker in self.workers[count:]:
            worker.kill()
            worker.setup = None
        for worker in self.active:
            worker.set_entry(setup)

    def wait_ready(self, timeout: float) -> None:
        """Wait (at most `timeout`) until every live active worker has finished its setup."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            waiting = [w for w in self.active if w.alive() and not w.ready]
            if not waiting:
                return
            for worker in waiting:
                worker.settle(timeout)
            time.sleep(0.05)

    def _free_workers(self, busy, timeout: float) -> list:
        """Idle workers to hand work to: ready ones without an abandoned request; any such idle
        one while none is ready (so a restarting worker never holds up a batch the others can
        compile)."""
        idle = [w for w in self.active if w not in busy]
        for worker in idle:
            worker.settle(timeout)
        available = [w for w in idle if w.abandoned is None]
        if any(w.ready and w.abandoned is None for w in self.active):
            return [w for w in available if w.ready]
        return available

    def run(self, kind: str, payloads: list, timeout: float, setup_timeout: float = 300.0,
            limits: Deadlines = Deadlines()) -> Iterator:
        """Yield (index, ok, value) as requests finish; ok is False on error, timeout or death.
        Past `limits.deadline()`, running requests are abandoned (see Worker.abandon) and the rest
        are not started: both are yielded with the value SKIPPED. Stragglers are killed (see
        Deadlines)."""
        pending = deque(enumerate(payloads))
        busy: dict[Worker, tuple] = {}
        durations: list[float] = []
        while pending or busy:
            deadline = limits.deadline()
            if deadline is not None and time.monotonic() >= deadline:
                for worker, (index, request_id, _) in list(busy.items()):
                    worker.abandon(request_id)
                    yield index, False, SKIPPED
                for index, _ in pending:
                    yield index, False, SKIPPED
                return
            for worker in self._free_workers(busy, timeout):
                if not pending:
                    break
                index, payload = pending.popleft()
                request_id = worker.send(kind, *payload)
                busy[worker] = (index, request_id, time.monotonic())
            conns = {w.conn: w for w in busy}
            for conn in multiprocessing.connection.wait(list(conns), timeout=0.2):
                worker = conns[conn]
                try:
                    reply = worker.receive()
                except (EOFError, OSError):
                    continue  # handled below as a dead worker
                index, request_id, started = busy[worker]
                if reply is None:
                    if worker.ready:
                        busy[worker] = (index, request_id, time.monotonic())
                elif reply[0] == request_id:
                    del busy[worker]
                    durations.append(time.monotonic() - started)
                    yield index, reply[1] == "ok", reply[2]
            now = time.monotonic()
            straggler = limits.straggler_limit(durations) if not pending else math.inf
            for worker, (index, _, started) in list(busy.items()):
                limit = timeout + (0 if worker.ready else setup_timeout)
                if worker.ready:
                    limit = min(limit, straggler)
                if now - started > limit or not worker.alive():
                    if not worker.alive():
                        reason = f"died (exit code {worker.process.exitcode})"
                    elif now - started > timeout:
                        reason = "timed out"
                    else:
                        reason = f"cut as a straggler after {now - started:.1f}s"
                    del busy[worker]
                    worker.restart()
                    yield index, False, f"{kind} {reason}"

    def stop(self, grace_s: float = 5.0) -> None:
        """Ask every worker to exit, wait up to `grace_s` for all of them together, kill the rest."""
        for worker in self.workers:
            if worker.alive():
                try:
                    worker.conn.send((0, "stop", ()))
                except (OSError, EOFError):
                    pass
        deadline = time.monotonic() + grace_s
        for worker in self.workers:
            if worker.process is not None:
                worker.process.join(timeout=max(deadline - time.monotonic(), 0.0))
            worker.kill()
