"""The consumer's turn (penstock._consumer): a GPU pipeline's threads wait while the thread that
consumes its batches runs, boundedly, and never for themselves."""
import hashlib
import threading
import time

import pytest

from penstock import _consumer, _engine
from penstock._workers import Workers


class _Busy(threading.Thread):
    """A thread on a CPU without the GIL (hashlib releases it for large inputs) until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.started_work = threading.Event()

    def run(self):
        data = b"x" * (8 << 20)
        while not self.stop.is_set():
            self.started_work.set()
            hashlib.sha256(data).digest()


@pytest.fixture
def busy():
    t = _Busy()
    t.start()
    t.started_work.wait()
    yield t
    t.stop.set()
    t.join()


@pytest.fixture
def idle():
    release = threading.Event()
    t = threading.Thread(target=release.wait, daemon=True)
    t.start()
    yield t
    release.set()
    t.join()


def _used_over(tid, seconds=0.05):
    before = _engine.thread_cpu_ns(tid)
    time.sleep(seconds)
    return _engine.thread_cpu_ns(tid) - before


def test_the_cpu_time_of_another_thread(busy, idle):
    assert _used_over(busy.native_id) > 0
    # a thread just started may not have reached its wait yet: it is idle from some point on
    assert any(_used_over(idle.native_id, 0.01) == 0 for _ in range(200))
    assert _engine.thread_cpu_ns(2**31 - 2) == -1  # no such thread


# the polls are long: the busy thread counts as running while it used half of each poll or more,
# which a loaded 2-core machine that takes its CPU away for a moment could deny it in a short one
# (and in a long one now and then: one of several waits lasts to the bound)
def test_waits_while_the_thread_runs_up_to_the_bound(busy):
    assert any(_engine.wait_while_running(busy.native_id, 20_000, 2_000) >= 20_000 for _ in range(20))


def test_a_thread_that_waits_itself_is_not_waited_for(idle):
    assert _engine.wait_while_running(idle.native_id, 5_000_000, 100) < 5_000_000


@pytest.fixture
def enabled(monkeypatch):
    monkeypatch.setenv(_consumer.ENV, "30000")
    monkeypatch.setattr(_consumer, "POLL_US", 2_000)
    for name, value in (("_consumer", 0), ("_max_us", 0), ("_last_ns", 0), ("_period_ns", 0.0)):
        monkeypatch.setattr(_consumer, name, value)
    _consumer.enable()


# the native wait is the tests' above; here what defer asks of it, which no scheduler can disturb
# (a real busy consumer sharing a loaded CI core with another thread ends some waits early)
def test_defer_waits_for_the_consumer_and_never_for_itself(enabled, busy, monkeypatch):
    waits = []
    monkeypatch.setattr(_engine, "wait_while_running", lambda *args: waits.append(args) or args[1])
    assert _consumer.defer() == 0  # no consumer yet
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)
    assert _consumer.defer() == 30_000
    assert _consumer.defer(5_000) == 5_000  # a smaller bound: what is left of a batch's budget
    assert waits == [(busy.native_id, 30_000, 2_000), (busy.native_id, 5_000, 2_000)]
    _consumer.consuming()
    assert _consumer.consumer() == threading.get_native_id()
    assert _consumer.defer() == 0  # the consumer itself
    assert len(waits) == 2


def test_zero_turns_the_waits_off(monkeypatch, busy):
    monkeypatch.setenv(_consumer.ENV, "0")
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)
    _consumer.enable()
    assert _consumer.budget() == 0
    assert _consumer.defer() == 0


@pytest.mark.parametrize("value", ["soon", "-1", "2.5"])
def test_a_bad_setting_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(_consumer.ENV, value)
    with pytest.raises(ValueError, match=_consumer.ENV):
        _consumer.enable()


def test_deferring_workers_let_the_consumer_run_before_each_call(enabled, busy, monkeypatch):
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)
    calls = []
    monkeypatch.setattr(_consumer, "defer", lambda max_us=None: calls.append(threading.current_thread().name) or 0)
    deferring, plain = Workers(1, "deferring", defers=True), Workers(1, "plain")
    try:
        assert [deferring.submit(lambda i=i: i).result() for i in range(3)] == [0, 1, 2]
        assert plain.submit(lambda: 7).result() == 7
    finally:
        for w in (deferring, plain):
            w.close()
            w.join()
    assert calls == ["deferring_0"] * 3


def test_the_budget_is_a_third_of_the_consumers_period(enabled):
    assert _consumer.budget() == 30_000  # no period yet: the bound
    _consumer.consuming()
    time.sleep(0.015)
    _consumer.consuming()
    assert 5_000 <= _consumer.budget() < 30_000
    done = threading.Event()
    other = threading.Thread(target=lambda: (_consumer.consuming(), done.set()))
    other.start()
    other.join()
    assert _consumer.consumer() == other.native_id
    assert _consumer.budget() == 30_000  # another consumer: its period is not known yet
