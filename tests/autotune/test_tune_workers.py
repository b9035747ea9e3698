"""Worker processes on the CPU with fake kernels: hangs, crashes and errors never stop a search."""
import math
import multiprocessing
import time

import pytest
from autotune_fakes import FAKE_OPS, FAKE_OPS_SOURCE, VIRTUAL_TIMER, FakeConfigSpec, bowl_cost

from build_tools.autotune.backend import WORKER_BYTES_PER_ENTRY_BYTE, ProcessBackend, compile_workers_for
from build_tools.autotune.entry import Limits
from build_tools.autotune.plan import plan_entries
from build_tools.autotune.run import RunOptions, Tuner
from build_tools.autotune.search import SearchSettings
from build_tools.autotune.workers import SKIPPED, Deadlines, EntrySetup, Worker, WorkerFailure, WorkerPool

SETUP = EntrySetup(FAKE_OPS_SOURCE, "fake_hazards", "float32", {"N": 64}, "cpu", VIRTUAL_TIMER)


def config(b0=64, b1=32, warps=4, stages=2, indexing="pointer"):
    return {"block_sizes": [b0, b1], "num_warps": warps, "num_stages": stages, "indexing": indexing}


GOOD = config()
HANG = config(stages=4, indexing="tensor_descriptor")
CRASH = config(b0=16, warps=16)
RAISE = config(warps=1, indexing="block_ptr")
WRONG = config(warps=8)


def test_pool_reports_hangs_crashes_and_errors_and_keeps_going():
    pool = WorkerPool(2)
    try:
        pool.set_entry(SETUP)
        payloads = [(GOOD,), (HANG,), (CRASH,), (RAISE,), (WRONG,)]
        results = {i: (ok, value) for i, ok, value in pool.run("warm", payloads, timeout=3, setup_timeout=120)}
        assert results[0][0] and results[4][0]  # a wrong result still compiles and runs
        assert results[1] == (False, "warm timed out")
        assert not results[2][0] and "died" in results[2][1]
        assert not results[3][0] and "fake launch failure" in results[3][1]
        again = list(pool.run("warm", [(GOOD,)], timeout=3, setup_timeout=120))
        assert again == [(0, True, None)]
        assert sum(w.restarts for w in pool.workers) == 2
    finally:
        pool.stop()


def test_bench_worker_is_restarted_after_a_hang_and_measures_again():
    worker = Worker(multiprocessing.get_context("spawn"), "bench")
    try:
        worker.set_entry(SETUP)
        with pytest.raises(WorkerFailure, match="timed out"):
            worker.call("measure", HANG, timeout=3, setup_timeout=120)
        outcome = worker.call("measure", GOOD, timeout=30, setup_timeout=120)
        assert outcome.us == bowl_cost(FakeConfigSpec(), GOOD) and outcome.error is None
        wrong = worker.call("measure", WRONG, timeout=30)
        assert math.isinf(wrong.us) and wrong.error.startswith("wrong output")
    finally:
        worker.stop()


def test_process_backend_tunes_around_every_hazard(tmp_path):
    backend = ProcessBackend(2, FAKE_OPS_SOURCE, "cpu", VIRTUAL_TIMER)
    opts = RunOptions(
        arch="test_arch", out_path=tmp_path / "t.json", work_dir=tmp_path / "w", device="cpu",
        with_baselines=False,
        settings=SearchSettings(population=8, generations=2, pattern_rounds=2, max_evaluations=24, seed=5),
        limits=Limits(compile_timeout_s=3, run_timeout_s=5, setup_timeout_s=120, finalists=2, rounds=2, per_round=2),
    )
    try:
        summary = Tuner(opts, plan_entries(FAKE_OPS, {"fake_hazards"}), backend).run()
    finally:
        backend.close()
    record = next(iter(summary.records.values()))
    spec = FakeConfigSpec()
    hazard = next(op for op in FAKE_OPS if op.name == "fake_hazards").kernel.hazard
    assert hazard(spec.normalize(record["config"])) is None
    assert record["us"] == bowl_cost(spec, record["config"])
    assert record["tuning"]["failed"] > 0


def test_a_failed_setup_is_reported_by_the_first_call():
    worker = Worker(multiprocessing.get_context("spawn"), "bench")
    broken = EntrySetup(FAKE_OPS_SOURCE, "fake_broken_shape", "float32", {"N": 13}, "cpu", VIRTUAL_TIMER)
    try:
        worker.set_entry(broken)
        with pytest.raises(WorkerFailure, match="(?s)setup failed.*N=13"):
            worker.call("ready", timeout=30, setup_timeout=120)
        worker.set_entry(SETUP)
        assert worker.call("ready", timeout=30, setup_timeout=120) is True
    finally:
        worker.stop()


def test_past_the_deadline_running_requests_are_abandoned_and_the_rest_skipped():
    pool = WorkerPool(1)
    try:
        pool.set_entry(SETUP)
        pool.wait_ready(120)
        assert all(w.ready for w in pool.workers)
        deadline = time.monotonic() + 2
        limits = Deadlines(deadline=lambda: deadline)
        results = list(pool.run("warm", [(GOOD,), (HANG,), (GOOD,)], timeout=60, limits=limits))
        assert results == [(0, True, None), (1, False, SKIPPED), (2, False, SKIPPED)]
        worker = pool.workers[0]
        assert time.monotonic() - deadline < 2 and worker.restarts == 0 and worker.abandoned is not None
        # The abandoned hang holds its worker until the request timeout, then the worker restarts.
        assert list(pool.run("warm", [(GOOD,)], timeout=2, setup_timeout=120)) == [(0, True, None)]
        assert worker.restarts == 1 and worker.abandoned is None
    finally:
        pool.stop()


def test_an_abandoned_request_that_finishes_frees_its_worker():
    pool = WorkerPool(1)
    try:
        pool.set_entry(SETUP)
        pool.wait_ready(120)
        worker = pool.workers[0]
        worker.abandon(worker.send("warm", GOOD))
        assert list(pool.run("warm", [(GOOD,)], timeout=60)) == [(0, True, None)]
        assert worker.restarts == 0 and worker.abandoned is None
    finally:
        pool.stop()


def test_a_straggler_is_cut_once_the_rest_of_the_batch_is_done():
    pool = WorkerPool(2)
    try:
        pool.set_entry(SETUP)
        pool.wait_ready(120)
        started = time.monotonic()
        limits = Deadlines(straggler_factor=4.0, straggler_min_s=1.0)
        results = {i: (ok, value) for i, ok, value in pool.run("warm", [(HANG,), (GOOD,)], timeout=60, limits=limits)}
        assert results[1] == (True, None)
        assert not results[0][0] and "straggler" in results[0][1]
        assert time.monotonic() - started < 10
    finally:
        pool.stop()


def test_an_entry_too_large_for_every_worker_runs_on_fewer_and_the_rest_are_stopped():
    pool = WorkerPool(3)
    try:
        pool.set_entry(SETUP, active=1)
        pool.wait_ready(120)
        first, *parked = pool.workers
        assert first.alive() and not any(w.alive() for w in parked)
        results = list(pool.run("warm", [(GOOD,), (GOOD,), (GOOD,)], timeout=60))
        assert sorted(results) == [(0, True, None), (1, True, None), (2, True, None)]
        assert not any(w.alive() for w in parked)  # no work went to a stopped worker
        pool.set_entry(SETUP)  # an entry that fits brings them back
        pool.wait_ready(120)
        assert all(w.alive() and w.ready for w in pool.workers)
        assert list(pool.run("warm", [(GOOD,)], timeout=60)) == [(0, True, None)]
    finally:
        pool.stop()


def test_compile_workers_shrink_with_the_entry_size_and_keep_one():
    gib = 1 << 30
    assert compile_workers_for(256e6, 80 * gib, 13) == 13
    # softmax_bwd 16384x16384 bf16 moves 1.5 GiB: its 13 workers ran an 80 GiB H100 out of memory
    fewer = compile_workers_for(1.5 * gib, 80 * gib, 13)
    assert 1 < fewer < 13
    assert fewer * (WORKER_BYTES_PER_ENTRY_BYTE * 1.5 + 1) <= 0.8 * 80
    assert compile_workers_for(100 * gib, 80 * gib, 13) == 1
