"""The thread that consumes a GPU pipeline's batches can run its Python first (opt-in).

A training loop's thread spends a step in two halves: launching the model's forward pass, Python
holding the GIL, then waiting with the GIL released (the backward pass runs in the autograd
engine's threads; a synchronization; the next batch). A pipeline ahead of its consumer starts the
next batch the moment a batch is taken, that is as the forward pass starts, so its threads' Python
(planning, launches, hand-offs) shares the GIL with the forward pass. With
``PENSTOCK_CONSUMER_FIRST_US`` set, a GPU pipeline's threads, where they are about to run a batch's
Python, first wait while the consumer's thread uses a CPU, so that their Python runs in the
consumer's waits.

The consumer is the last thread that waited for a GPU pipeline's outputs; it counts as running
while its CPU time grows by half the polling interval or more. A thread never waits for itself, and
its waits for one batch end after a budget however busy the consumer is: a third of the consumer's
period between batches, at most ``PENSTOCK_CONSUMER_FIRST_US`` microseconds. A consumer on a CPU
without the GIL (spinning in a CUDA synchronization, say) looks busy too; the budget bounds what
that costs the pipeline.

It is off by default (0). With the GPU pipeline emulated on a 2-core host, it halved the Python
steps of a loop that alternates Python and GIL-free waits; training ResNet-18 on an H200 it made no
difference beyond the runs' spread (docs/benchmarks.md).
"""
from __future__ import annotations

import threading
import time

from . import _engine
from ._environment import non_negative

ENV = "PENSTOCK_CONSUMER_FIRST_US"
DEFAULT_MAX_US = 0  # off
POLL_US = 50  # how often a waiting thread looks: a small part of a forward pass

_consumer = 0  # the native id of the thread that last waited for a GPU pipeline's outputs
_last_ns = 0  # when it last did
_period_ns = 0.0  # its period between batches (a moving average)


def max_wait_us() -> int:
    """The longest a pipeline thread waits for the consumer over one batch, in microseconds (0: never)."""
    return non_negative(ENV, DEFAULT_MAX_US, "a whole number of microseconds (0 turns it off)")


_max_us = 0  # set when a GPU pipeline starts


def enable() -> None:
    """A GPU pipeline starts: its threads defer to the consumer (by the bound configured now)."""
    global _max_us
    _max_us = max_wait_us()


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
    _consumer, _last_ns = tid, now


def consumer() -> int:
    """The consumer's native thread id (0: none yet)."""
    return _consumer


def budget() -> int:
    """Microseconds a pipeline thread may wait for the consumer over one batch."""
    if not _period_ns:
        return _max_us
    return min(_max_us, int(_period_ns / 3000))


def defer(max_us: int | None = None) -> int:
    """Called by a pipeline thread before a batch's Python: waits while the consumer runs, at most
    ``max_us`` (default: a batch's budget, of which callers pass what is left); the microseconds
    waited."""
    tid = _consumer
    max_us = budget() if max_us is None else max_us
    if not tid or max_us <= 0 or tid == threading.get_native_id():
        return 0
    return _engine.wait_while_running(tid, max_us, POLL_US)
