"""Python's switch interval while pipelines with GPU stages run.

Between their native calls, a GPU pipeline's threads run short stretches of Python (planning a
batch, queueing its kernels, handing it on). Every call that gives the GIL away on the way (numpy
on arrays of more than a few hundred elements, CuPy, the engine's longer calls, a queue's wait)
costs the thread up to Python's switch interval (5 ms) to get it back while another thread runs
Python, and a training loop's thread runs Python most of the time: at the default, the pipeline
made almost no progress during a training step. A shorter interval bounds each of those waits.
The interval is shortened while such a pipeline exists (never lengthened), and restored after the
last one, unless the program changed it meanwhile. ``PENSTOCK_SWITCH_INTERVAL_US`` sets the
interval in microseconds; 0 leaves Python's alone."""
from __future__ import annotations

import sys
import threading

from ._environment import non_negative

ENV = "PENSTOCK_SWITCH_INTERVAL_US"
DEFAULT_US = 200

_lock = threading.Lock()
_users = 0
_saved: float | None = None  # the interval before the first user shortened it
_ours: float | None = None  # the interval set for the users


def configured() -> float:
    """The interval asked for, in seconds (0: leave Python's)."""
    return non_negative(ENV, DEFAULT_US, "a number of microseconds (0 leaves Python's)", float) * 1e-6


def acquire() -> None:
    """A pipeline with GPU stages starts: the interval is at most the configured one."""
    global _users, _saved, _ours
    wanted = configured()
    with _lock:
        _users += 1
        if wanted and sys.getswitchinterval() > wanted:
            if _saved is None:
                _saved = sys.getswitchinterval()
            sys.setswitchinterval(wanted)
            _ours = sys.getswitchinterval()


def release() -> None:
    """One such pipeline ended: after the last, the interval it replaced comes back."""
    global _users, _saved, _ours
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0 and _saved is not None:
            if sys.getswitchinterval() == _ours:  # the program did not set one of its own meanwhile
                sys.setswitchinterval(_saved)
            _saved = _ours = None
