"""The consumer's turn (penstock._consumer): a GPU pipeline's threads wait while the thread that
consumes its batches runs Python, boundedly, and never for themselves."""
import hashlib
import os
import subprocess
import sys
import threading
import time

import pytest

from penstock import _consumer, _engine


class _Consumer(threading.Thread):
    """A consumer's thread: watched by the engine, then running ``work`` until stopped."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work = work
        self.stop = threading.Event()
        self.watched = threading.Event()

    def run(self):
        _consumer.consuming()
        self.watched.set()
        while not self.stop.is_set():
            self.work()


def _python():  # holds the GIL but for the interpreter's switches
    for _ in range(10_000):
        pass


_BLOCK = b"x" * (64 << 20)


def _native():  # on a CPU without the GIL (hashlib releases it for large inputs), as a CUDA spin-wait is:
    hashlib.sha256(_BLOCK).digest()  # tens of ms, far longer than a look, between moments of Python


def _operators():  # a forward pass: Python, then a short native part without the GIL, in turn
    for _ in range(1_000):
        pass
    hashlib.sha256(_BLOCK[:32 << 10]).digest()


def _asleep():
    time.sleep(0.01)


@pytest.fixture
def consumer(request, monkeypatch):
    # each test watches a consumer of its own, never the one another left behind
    monkeypatch.setattr(_consumer, "_consumer", 0)
    t = _Consumer(request.param)
    t.start()
    t.watched.wait()
    yield t
    t.stop.set()
    t.join()


def _longest_wait(tries=20, max_us=20_000):
    return max(_engine.wait_while_consumer_runs_python(max_us, 100, 5_000) for _ in range(tries))


# long looks: a loaded 2-core machine may keep the consumer from its CPU for a few ms (and longer now
# and then: of several waits one lasts to the bound)
@pytest.mark.parametrize("consumer", [_python, _operators], indirect=True)
def test_waits_while_the_consumer_runs_python_up_to_the_bound(consumer):
    assert _longest_wait() >= 20_000


@pytest.mark.parametrize("consumer", [_native, _asleep], indirect=True)
def test_a_consumer_without_the_gil_is_not_waited_for(consumer):
    assert _longest_wait(tries=5, max_us=5_000_000) < 1_000_000


def test_the_consumer_is_watched_until_its_thread_ends():
    t = _Consumer(_python)
    t.start()
    t.watched.wait()
    assert _engine.consumer_holds_gil() >= 0
    t.stop.set()
    t.join()
    assert _engine.consumer_holds_gil() == -1  # its thread state is gone: nothing is read of it
    assert _engine.wait_while_consumer_runs_python(5_000_000, 100, 5_000) < 5_000_000


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
def test_defer_waits_for_the_consumer_and_never_for_itself(enabled, monkeypatch):
    waits = []
    monkeypatch.setattr(_engine, "wait_while_consumer_runs_python", lambda *args: waits.append(args) or 100)
    assert _consumer.defer(30_000) == 0  # no consumer yet
    monkeypatch.setattr(_consumer, "_consumer", 2**31 - 2)  # another thread's id
    assert _consumer.defer(30_000) == 100
    assert _consumer.defer(5_000) == 100  # a smaller bound: what is left of a run's budget
    assert waits == [(30_000, 2_000, _consumer.LOOK_US), (5_000, 2_000, _consumer.LOOK_US)]
    assert _consumer.defer() == 0  # no budget while the consumer's period is not known
    _consumer.consuming()
    assert _consumer.consumer() == threading.get_native_id()
    assert _consumer.defer(30_000) == 0  # the consumer itself
    assert len(waits) == 2


def test_zero_turns_the_waits_off(monkeypatch):
    monkeypatch.setenv(_consumer.ENV, "0")
    monkeypatch.setattr(_consumer, "_consumer", 2**31 - 2)
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


def test_a_consumer_that_never_waits_gets_no_waits_for_a_while(enabled, monkeypatch):
    """Waits that last to their bound say the consumer has no turn to give: once most do, the next
    OFF_FOR are not made; then they are tried again, and turned off for twice as many if they still
    last to their bound. One that ends early starts the count over."""
    waited = []
    monkeypatch.setattr(_engine, "wait_while_consumer_runs_python",
                        lambda max_us, poll, look: waited.append(max_us) or max_us)
    monkeypatch.setattr(_consumer, "_consumer", 2**31 - 2)

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
    monkeypatch.setattr(_engine, "wait_while_consumer_runs_python", lambda max_us, poll, look: 300)
    before = _consumer.counts()
    assert all(_consumer.defer(4_000) == 300 for _ in range(50))
    after = _consumer.counts()
    assert {k: after[k] - before[k] for k in after} == {"waits": 50, "waited_us": 15_000, "to_the_bound": 0,
                                                        "turned_off": 0}
    monkeypatch.setattr(_engine, "wait_while_consumer_runs_python", lambda max_us, poll, look: max_us)
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


_FORKS = r"""
import os, sys, threading, time, warnings
from penstock import _consumer, _engine
warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads: what this checks
stop, watched = threading.Event(), threading.Event()

def consumer():
    _consumer.consuming()
    watched.set()
    while not stop.is_set():
        for _ in range(1_000):
            pass

def looks():
    while not stop.is_set():
        _engine.wait_while_consumer_runs_python(2_000, 1, 200)

threads = [threading.Thread(target=consumer)] + [threading.Thread(target=looks) for _ in range(3)]
threads[0].start()
watched.wait()
for t in threads[1:]:
    t.start()
hung = 0
for _ in range(100):
    pid = os.fork()
    if pid == 0:  # Python starting over in the child frees the consumer's thread state, unwatching it
        os._exit(0)
    deadline = time.monotonic() + 10
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() > deadline:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.002)
stop.set()
for t in threads:
    t.join()
print(hung)
"""


def test_a_fork_while_pipeline_threads_look_at_the_consumer_leaves_the_child_free_to_go_on():
    """Python starting over in a forked child frees the other threads' states, unwatching the consumer's:
    no lock a parent's thread held while it looked may stop the child there."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # penstock as this test has it
    out = subprocess.run([sys.executable, "-c", _FORKS], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.split() == ["0"], out.stderr[-2000:]
