"""The thread that consumes a GPU pipeline's batches runs its Python first.

A training loop's thread spends a step in two halves: its forward pass, a few hundred operators each
run with the GIL taken back (Python to launch it, the GIL released around its native part), then
waiting with the GIL released (the backward pass runs in the autograd engine's threads). A pipeline
thread that wants the GIL meanwhile is woken at every release and takes it at one of them: the
forward pass then waits for that thread's Python and for the hand-backs, and both threads spend
CPU on waking each other. On the host emulation (bench/train_emulated.py: a torch-like forward pass
of 300 operators, then 7 ms without the GIL, the training loop's thread on a core of its own) that
stretched a 4.3 ms forward pass to 7-8 ms, and the step to 0.74-0.80 of the loop alone's rate.

So a GPU pipeline's threads, where they are about to run a batch's Python, first wait without the
GIL while the consumer's thread runs Python (``defer``), and go on once it waits: the same Python
then runs in the consumer's waits. Only while the pipeline is ahead (the executor asks: at least two
of its batches are on the way and the consumer is not itself waiting for one): the batch a consumer
waits for is never held back. A stage's run of a batch's operators waits at most half the consumer's
period between batches in all (``budget``), and so does the wait of a decoding job (once its
decoders are done: it hands them its JPEGs at once), and none more than
``PENSTOCK_CONSUMER_FIRST_US`` microseconds (20 ms by default; 0 turns the waits off). A consumer
that never waits (Python without pause) has no turn to give: once most waits last to their bound,
none are made for a while, and for twice as long each time that comes again before any wait ended
early.

The consumer is the last thread that waited for a GPU pipeline's outputs. It counts as running its
Python while it takes the GIL within ``LOOK_US`` whenever a waiting thread looks (a forward pass
gives the GIL away around each operator's native part, for tens of microseconds); not while it waits
without the GIL, asleep or on a CPU (the backward pass, a ``loss.item()`` spinning in CUDA's
synchronization), when the pipeline's Python takes nothing from it. The engine reads whether it
holds the GIL from its Python thread state, watched from its first wait until the thread ends. A
thread never waits for itself.
"""
from __future__ import annotations

import threading
import time

from . import _engine
from ._environment import non_negative

ENV = "PENSTOCK_CONSUMER_FIRST_US"
DEFAULT_MAX_US = 20_000
PERIOD_SHARE = 0.5  # of the consumer's period between batches: what a batch's run may wait in all
POLL_US = 50  # how often a waiting thread looks: a small part of a forward pass
LOOK_US = 200  # a consumer that does not take the GIL within a look has left its Python
# Waits that last to their bound: smoothed over the last ~5, more than half of them turns the waits
# off for the next OFF_FOR, then they are tried again; off again before any wait ended early, for
# twice as many (up to OFF_MAX)
_BOUND_SMOOTHING, _BOUND_SHARE, OFF_FOR, OFF_MAX = 0.2, 0.5, 1000, 64_000

_consumer = 0  # the native id of the thread that last waited for a GPU pipeline's outputs
_last_ns = 0  # when it last did
_period_ns = 0.0  # its period between batches (a moving average)
_to_the_bound = 0.0  # the share of recent waits that lasted to their bound (smoothed)
_off_for = 0  # waits not to make, after too many lasted to their bound
_off_next = OFF_FOR  # how many the next time
# since the process started: waits made, microseconds waited, waits that lasted to their bound, times
# the waits were turned off (what a benchmark reports of the turn)
_counts = {"waits": 0, "waited_us": 0, "to_the_bound": 0, "turned_off": 0}


def max_wait_us() -> int:
    """The longest one run of a batch's operators waits for the consumer, in microseconds (0: never)."""
    return non_negative(ENV, DEFAULT_MAX_US, "a whole number of microseconds (0 turns it off)")


_max_us = 0  # set when a GPU pipeline starts


def enable() -> None:
    """A GPU pipeline starts: its threads defer to the consumer (by the bound configured now)."""
    global _max_us
    _max_us = max_wait_us()


def enabled() -> bool:
    return _max_us > 0


class _Unwatch:
    """Held by a consumer's thread (thread-local): as the thread ends, before its Python thread
    state goes, the engine stops watching it."""
    __slots__ = ("state",)

    def __init__(self, state: int):
        self.state = state

    def __del__(self, unwatch=_engine.unwatch_consumer) -> None:  # bound now: it may run at interpreter exit
        unwatch(self.state)


_thread = threading.local()


def consuming() -> None:
    """The calling thread waits for a GPU pipeline's outputs: it is the consumer."""
    global _consumer, _last_ns, _period_ns
    now = time.perf_counter_ns()
    tid = threading.get_native_id()
    if tid == _consumer and _last_ns:
        interval = now - _last_ns
        _period_ns = interval if not _period_ns else 0.8 * _period_ns + 0.2 * interval
    else:
        _period_ns = 0.0
        state = _engine.watch_consumer()
        if getattr(_thread, "unwatch", None) is None:
            _thread.unwatch = _Unwatch(state)
    _consumer, _last_ns = tid, now


def consumer() -> int:
    """The consumer's native thread id (0: none yet)."""
    return _consumer


def budget() -> int:
    """Microseconds a run of a batch's operators may wait for the consumer in all: none until the
    consumer's period is known."""
    return min(_max_us, int(_period_ns * PERIOD_SHARE / 1000))


def defer(max_us: int | None = None) -> int:
    """Called by a pipeline thread before a batch's Python: waits while the consumer runs Python, at most
    ``max_us`` (default: a run's budget, of which callers pass what is left); the microseconds
    waited."""
    global _to_the_bound, _off_for, _off_next
    tid = _consumer
    max_us = budget() if max_us is None else max_us
    if not tid or max_us <= 0 or tid == threading.get_native_id():
        return 0
    if _off_for > 0:
        _off_for -= 1
        return 0
    waited = _engine.wait_while_consumer_runs_python(max_us, POLL_US, LOOK_US)
    bound = waited >= max_us - POLL_US
    if not bound:
        _off_next = OFF_FOR
    _to_the_bound += _BOUND_SMOOTHING * (bound - _to_the_bound)
    _counts["waits"] += 1
    _counts["waited_us"] += waited
    _counts["to_the_bound"] += bound
    if _to_the_bound > _BOUND_SHARE:
        _off_for, _off_next, _to_the_bound = _off_next, min(2 * _off_next, OFF_MAX), 0.0
        _counts["turned_off"] += 1
    return waited


def counts() -> dict[str, int]:
    """The waits made since the process started: how many, the microseconds waited, how many lasted to
    their bound, and how often the waits were turned off."""
    return dict(_counts)
