"""The consumer's turn (penstock._consumer): a GPU pipeline's threads wait while the thread that
consumes its batches runs, boundedly, and never for themselves."""
import hashlib
import threading
import time

import pytest

from penstock import _consumer, _engine


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
    for name, value in (("_consumer", 0), ("_max_us", 0), ("_last_ns", 0), ("_period_ns", 0.0),
                        ("_to_the_bound", 0.0), ("_off_for", 0), ("_off_next", _consumer.OFF_FOR)):
        monkeypatch.setattr(_consumer, name, value)
    _consumer.enable()


# the native wait is the tests' above; here what defer asks of it, which no scheduler can disturb
# (a real busy consumer sharing a loaded CI core with another thread ends some waits early)
def test_defer_waits_for_the_consumer_and_never_for_itself(enabled, busy, monkeypatch):
    waits = []
    monkeypatch.setattr(_engine, "wait_while_running", lambda *args: waits.append(args) or 100)
    assert _consumer.defer(30_000) == 0  # no consumer yet
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)
    assert _consumer.defer(30_000) == 100
    assert _consumer.defer(5_000) == 100  # a smaller bound: what is left of a run's budget
    assert waits == [(busy.native_id, 30_000, 2_000), (busy.native_id, 5_000, 2_000)]
    assert _consumer.defer() == 0  # no budget while the consumer's period is not known
    _consumer.consuming()
    assert _consumer.consumer() == threading.get_native_id()
    assert _consumer.defer(30_000) == 0  # the consumer itself
    assert len(waits) == 2


def test_zero_turns_the_waits_off(monkeypatch, busy):
    monkeypatch.setenv(_consumer.ENV, "0")
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)
    _consumer.enable()
    assert not _consumer.enabled()
    assert _consumer.budget() == 0
    assert _consumer.defer() == 0


def test_on_unless_turned_off(monkeypatch):
    monkeypatch.delenv(_consumer.ENV, raising=False)
    _consumer.enable()
    assert _consumer.enabled() and _consumer.max_wait_us() == _consumer.DEFAULT_MAX_US


@pytest.mark.parametrize("value", ["soon", "-1", "2.5"])
def test_a_bad_setting_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(_consumer.ENV, value)
    with pytest.raises(ValueError, match=_consumer.ENV):
        _consumer.enable()


def test_the_budget_is_half_the_consumers_period(enabled, monkeypatch):
    assert _consumer.budget() == 0  # no period yet: no waits
    _consumer.consuming()
    time.sleep(0.015)
    _consumer.consuming()
    assert 7_500 <= _consumer.budget() < 30_000
    monkeypatch.setattr(_consumer, "_period_ns", 0.1e9)
    assert _consumer.budget() == 30_000  # a slow consumer: the bound
    done = threading.Event()
    other = threading.Thread(target=lambda: (_consumer.consuming(), done.set()))
    other.start()
    other.join()
    assert _consumer.consumer() == other.native_id
    assert _consumer.budget() == 0  # another consumer: its period is not known yet


def test_a_consumer_that_never_waits_gets_no_waits_for_a_while(enabled, busy, monkeypatch):
    """Waits that last to their bound say the consumer has no turn to give: once most do, the next
    OFF_FOR are not made; then they are tried again, and turned off for twice as many if they still
    last to their bound. One that ends early starts the count over."""
    waited = []
    monkeypatch.setattr(_engine, "wait_while_running", lambda tid, max_us, poll: waited.append(max_us) or max_us)
    monkeypatch.setattr(_consumer, "_consumer", busy.native_id)

    def offs_after_bound_waits() -> tuple[int, int]:  # (waits made before they turn off, waits not made)
        made = 0
        while _consumer.defer(4_000):
            made += 1
        skipped = 1
        while _consumer.defer(4_000) == 0:
            skipped += 1
        return made, skipped
    made, skipped = offs_after_bound_waits()
    assert 2 <= made <= 6 and skipped == _consumer.OFF_FOR
    made, skipped = offs_after_bound_waits()  # the first call that came back was one more to the bound
    assert made + 1 >= 2 and skipped == 2 * _consumer.OFF_FOR
    # a wait the consumer's Python ends early keeps them on, and the next time off is OFF_FOR again
    monkeypatch.setattr(_engine, "wait_while_running", lambda tid, max_us, poll: 300)
    before = _consumer.counts()
    assert all(_consumer.defer(4_000) == 300 for _ in range(50))
    after = _consumer.counts()
    assert {k: after[k] - before[k] for k in after} == {"waits": 50, "waited_us": 15_000, "to_the_bound": 0,
                                                        "turned_off": 0}
    monkeypatch.setattr(_engine, "wait_while_running", lambda tid, max_us, poll: max_us)
    assert offs_after_bound_waits()[1] == _consumer.OFF_FOR
    assert _consumer.counts()["turned_off"] == after["turned_off"] + 1


class _Ahead:
    """What Executor.defer_to_consumer reads of its executor."""

    def __init__(self, on_the_way, consumer_waits=False, defers=True):
        self._on_the_way, self._consumer_waits, self._defers = on_the_way, consumer_waits, defers


@pytest.mark.parametrize("state, defers", [
    (_Ahead(2), True),  # the consumer's next batch has another behind it
    (_Ahead(3), True),
    (_Ahead(1), False),  # the batch on the way is the one it takes next: never held back
    (_Ahead(2, consumer_waits=True), False),  # it waits for a batch: no Python to let run first
    (_Ahead(2, defers=False), False),  # turned off, or a pipeline without GPU stages
])
def test_a_pipeline_defers_only_while_it_is_ahead_of_its_consumer(monkeypatch, state, defers):
    from penstock._executor import Executor
    asked = []
    monkeypatch.setattr(_consumer, "defer", lambda max_us=None: asked.append(max_us) or 7)
    assert Executor.defer_to_consumer(state, 900) == (7 if defers else 0)
    assert asked == ([900] if defers else [])
