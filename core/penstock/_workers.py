"""Threads for an operator's background work, closable from a finalizer.

A pipeline shuts its operators down from ``__del__``, in whichever thread the garbage collector
interrupts. ``concurrent.futures.ThreadPoolExecutor`` is unsafe there: its ``submit`` holds the
executor's lock and then a module-wide one, and its ``shutdown`` takes the executor's lock. A
collection inside any ``submit`` (holding the module-wide lock) that shuts down a pool whose own
submitter waits for that lock never returns (a fresh-clone CI run hung so). Here neither
``submit`` nor ``close`` takes a lock: both only put on a ``SimpleQueue``."""
from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Callable


def host_cores() -> int:
    """The host cores this process may count on. A launcher that pins each rank to its own cores
    (numactl, Slurm's binding) leaves it fewer than the host has: those. Otherwise the host's cores
    are split evenly among the processes that share it, ``LOCAL_WORLD_SIZE`` as torchrun sets it
    (one process per GPU: four pipelines on a 64-core host each count on 16)."""
    allowed = len(os.sched_getaffinity(0))
    if allowed < (os.cpu_count() or allowed):
        return allowed
    local_ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE") or 1))
    return max(1, allowed // local_ranks)


class _State:
    __slots__ = ("closed",)

    def __init__(self) -> None:
        self.closed = False


class Workers:
    """``num_threads`` daemon threads running submitted calls in submission order."""

    def __init__(self, num_threads: int, name: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._state = _State()
        # The threads hold the queue and the state, not this object: an owner that is dropped
        # without closing it still ends them (through __del__).
        self.threads = [threading.Thread(target=_run, args=(self._tasks, self._state), daemon=True,
                                         name=f"{name}_{i}") for i in range(num_threads)]
        for t in self.threads:
            t.start()
        _live.add(self)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        if self._state.closed:
            raise RuntimeError("submit after the worker threads were closed")
        future: Future = Future()
        self._tasks.put((future, fn, args))
        return future

    def close(self) -> None:
        """Never blocks: each thread ends after the call it is running; calls not started yet are
        cancelled."""
        if not self._state.closed:
            self._state.closed = True
            for _ in self.threads:
                self._tasks.put(None)

    def join(self) -> None:
        """Waits for the threads to end (after ``close``): what they ran no longer runs."""
        for t in self.threads:
            if t is not threading.current_thread():
                t.join()

    def __del__(self) -> None:
        self.close()


_live: "weakref.WeakSet[Workers]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Daemon threads would be cut off inside a native call or a CUDA one as the interpreter goes:
    # at exit, each ends after the call it is running, as ThreadPoolExecutor's threads do.
    for workers in list(_live):
        workers.close()
        workers.join()


def _run(tasks: queue.SimpleQueue, state: _State) -> None:
    while True:
        task = tasks.get()
        if task is None:
            return
        future, fn, args = task
        del task
        if state.closed:
            future.cancel()
        elif future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)
        del future, fn, args  # what the call held is freed now, not when the next one comes
