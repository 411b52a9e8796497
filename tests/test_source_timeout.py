"""Sources that hang: Pipeline(source_timeout=...) makes run() fail naming the source, the iteration
and the sample, with the stack where the source waits; Pipeline.dump_stacks() shows every thread's
stack, the worker processes' too, while run() waits. Without source_timeout nothing changes."""
import io
import os
import threading
import time

import numpy as np
import pytest

from penstock import fn, pipeline_def
from penstock.pipeline import Pipeline

_WAIT_S = 120  # generous: only a hang gets here

release = threading.Event()  # lets a hanging source of this process return at the end of a test
entered = threading.Event()


@pytest.fixture(autouse=True)
def _release_hanging_sources():
    release.clear()
    entered.clear()
    yield
    release.set()


def waits_at_sample(si):
    """Per-sample: sample 2 of iteration 1 waits (for the test's release in this process; in a
    worker process, for good)."""
    if si.iteration == 1 and si.idx_in_batch == 2:
        entered.set()
        while not release.wait(0.05):
            pass
    return np.full(2, si.idx_in_epoch, np.int32)


def waits_at_batch(iteration):
    if iteration == 1:
        entered.set()
        release.wait()
    return np.full((4, 2), iteration, np.int32)


def _pipe(source, batch, parallel=False, **kw):
    kw.setdefault("prefetch_queue_depth", 1)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, py_num_workers=2, **kw)
    def p():
        return fn.external_source(source, batch=batch, parallel=parallel, name="src")

    return p()


def _alive(pid):
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


# ---- source_timeout -------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [False, True], ids=["per-sample", "batch"])
def test_serial_source_that_hangs_fails_run_naming_source_iteration_sample(batch):
    pipe = _pipe(waits_at_batch if batch else waits_at_sample, batch, source_timeout=1)
    pipe.run()
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        pipe.run()
    assert 1 <= time.monotonic() - start < _WAIT_S
    msg = str(info.value)
    assert "'src'" in msg and "source_timeout=1 s" in msg and "iteration 1 of epoch 0" in msg
    assert ("the whole batch" in msg) if batch else ("sample 2" in msg)
    stack = "".join(getattr(info.value, "__notes__", []))
    assert ("in waits_at_batch" if batch else "in waits_at_sample") in stack  # where it waits
    with pytest.raises(RuntimeError, match="still running the call that timed out in iteration 1"):
        pipe.run()  # at once: the source is still inside that call


def test_a_timeout_while_prefetching_fails_its_own_iteration_not_the_one_before():
    # the first run() schedules iterations 0 and 1; 1 times out, and fails the run() that asks for it
    pipe = _pipe(waits_at_batch, True, source_timeout=1, prefetch_queue_depth=2)
    np.testing.assert_array_equal(pipe.run()[0].as_array(), np.zeros((4, 2)))
    with pytest.raises(RuntimeError, match="source_timeout=1 s in iteration 1 of epoch 0"):
        pipe.run()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_parallel_source_that_hangs_fails_run_naming_source_iteration_sample(method):
    pipe = _pipe(waits_at_sample, False, parallel=True, py_start_method=method, source_timeout=3)
    pipe.start_py_workers()
    pids = pipe._py_pool.pids()
    with pytest.raises(RuntimeError) as info:
        for _ in range(3):  # iteration 0 may wait too: its worker holds its part while in iteration 1
            pipe.run()
    msg = str(info.value)
    assert "'src'" in msg and "source_timeout=3 s" in msg and "iteration 1 of epoch 0, sample 2" in msg
    assert "worker process" in msg and any(f"pid {p}" in msg for p in pids)
    stack = "".join(getattr(info.value, "__notes__", []))
    assert "in waits_at_sample" in stack  # the worker's stack, where its source waits
    end = time.monotonic() + _WAIT_S  # the workers, stuck in the source, are ended
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    with pytest.raises(RuntimeError, match="shut down .*did not return within source_timeout"):
        pipe.run()


class SlowToLoad:
    """A batch source that takes 3 s to arrive in a spawned worker (to unpickle)."""

    def __call__(self, iteration):
        return np.full((4, 2), iteration, np.int32)

    def __getstate__(self):
        return {"load_s": 3}

    def __setstate__(self, state):
        time.sleep(state["load_s"])


def test_the_workers_start_does_not_count():
    """The timeout counts from when the workers have loaded their sources, not from their start."""
    pipe = _pipe(SlowToLoad(), True, parallel=True, py_start_method="spawn", source_timeout=2)
    for it in range(3):
        (out,) = pipe.run()
        assert out.at(0).tolist() == [it, it]


def test_without_source_timeout_the_source_runs_in_the_calling_thread():
    """DALI's behaviour, unchanged: the source runs in run()'s thread, however long it takes."""
    threads = []

    def source(iteration):
        threads.append(threading.current_thread())
        return np.zeros((4, 1), np.int32)

    pipe = _pipe(source, True)
    pipe.run()
    assert set(threads) == {threading.current_thread()}
    timed = _pipe(source, True, source_timeout=30)
    threads.clear()
    timed.run()
    assert {t.name for t in threads} == {"penstock-source-src"}


@pytest.mark.parametrize("value", [0, -1, True, "5", float("nan")])
def test_source_timeout_must_be_a_positive_number(value):
    with pytest.raises(ValueError, match="source_timeout must be a positive number of seconds"):
        Pipeline(batch_size=1, num_threads=1, source_timeout=value)


def test_source_timeout_property():
    assert Pipeline(batch_size=1).source_timeout is None
    assert Pipeline(batch_size=1, source_timeout=2.5).source_timeout == 2.5


# ---- dump_stacks ----------------------------------------------------------------------------------

def _run_in_thread(pipe):
    errors = []

    def loop():
        try:
            for _ in range(2):
                pipe.run()
        except Exception as exc:  # noqa: BLE001 - the pipeline shut down under it
            errors.append(exc)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t, errors


def test_dump_stacks_shows_where_a_serial_source_waits():
    pipe = _pipe(waits_at_sample, False)
    runner, errors = _run_in_thread(pipe)
    assert entered.wait(_WAIT_S)
    out = io.StringIO()
    text = pipe.dump_stacks(out)
    assert out.getvalue() == text
    assert f"process {os.getpid()}" in text and "in waits_at_sample" in text and "(most recent call first)" in text
    release.set()
    runner.join(_WAIT_S)
    assert not runner.is_alive() and not errors


def test_dump_stacks_shows_what_each_worker_runs():
    pipe = _pipe(waits_at_sample, False, parallel=True)
    runner, _ = _run_in_thread(pipe)
    end = time.monotonic() + _WAIT_S
    text = ""
    while time.monotonic() < end and "in waits_at_sample" not in text:
        text = pipe.dump_stacks(io.StringIO())
    assert "in waits_at_sample" in text
    assert "running external_source ('src'), iteration 1 of epoch 0, sample 2" in text
    pids = pipe._py_pool.pids()
    assert all(f"(pid {p})" in text for p in pids)
    pipe._shutdown()  # the workers end though their source never returns
    runner.join(_WAIT_S)
    assert not runner.is_alive()


def test_thread_stacks_collect_no_garbage_while_the_thread_list_is_locked(monkeypatch):
    # sys._current_frames() builds its dict with the interpreter's thread list locked: a pipeline the
    # garbage collector finalized in there joined threads that could not end (10 s a join; a test
    # session with a thousand pipelines left to collect hung for hours)
    import gc
    import sys

    from penstock import _sources
    seen = []
    current_frames = sys._current_frames

    def recording():
        seen.append(gc.isenabled())
        return current_frames()
    monkeypatch.setattr(sys, "_current_frames", recording)
    assert gc.isenabled()
    stacks = _sources.thread_stacks()
    assert seen == [False] and gc.isenabled()
    assert "test_thread_stacks_collect_no_garbage" in stacks
