"""The host threads operators run on: ``ThreadPool``, and the default pool's size
(``set_num_threads`` / ``get_num_threads``)."""
from __future__ import annotations

import os
import threading

from ... import _engine
from ..._workers import host_cores

__all__ = ["ThreadPool", "get_num_threads", "set_num_threads"]


class ThreadPool:
    """A pool of ``num_threads`` host threads (``get_num_threads()`` when not given) that CPU
    operators split their batches over. ``device_id``: the GPU the pool serves (None: none)."""
    _CURRENT = object()

    def __init__(self, num_threads: int | None = None, *, device_id: int | None = _CURRENT):  # type: ignore[assignment]
        if device_id is ThreadPool._CURRENT:
            from ._device import Device
            device_id = Device.current().device_id
        n = get_num_threads() if num_threads is None else _checked(num_threads)
        self._pool = _engine.ThreadPool(n, "penstock-dyn")
        self._device_id = device_id

    @property
    def num_threads(self) -> int:
        return self._pool.num_threads

    @property
    def device_id(self) -> int | None:
        return self._device_id

    def __repr__(self) -> str:
        return f"ThreadPool(num_threads={self.num_threads}, device_id={self._device_id})"


def _checked(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"The number of threads must be an integer, got {n!r}")
    if n <= 0:
        raise ValueError(f"The number of threads must be positive; got {n}")
    cores = os.cpu_count() or 1
    if n > 100 * cores:
        raise ValueError(f"The number of threads must not exceed 100 per CPU: {n} threads for {cores} CPUs")
    return n


_num_threads: int | None = None  # set_num_threads' value
_default_pools: dict = {}        # device id -> the default pool of contexts without their own
_lock = threading.Lock()


def get_num_threads() -> int:
    """The size of the default thread pool: what ``set_num_threads`` set, else ``DALI_NUM_THREADS``,
    else the host cores this process may count on (its share when several ranks share the host)."""
    if _num_threads is not None:
        return _num_threads
    env = os.environ.get("DALI_NUM_THREADS")
    return int(env) if env else host_cores()


def set_num_threads(n: int | None) -> None:
    """Sets the size of the default thread pool (None: back to the default). Contexts made without
    a pool of their own use a pool of the new size from their next operator on."""
    global _num_threads
    _num_threads = None if n is None else _checked(n)


def default_pool(device_id: int | None) -> ThreadPool:
    """The shared pool of contexts without their own, of the current default size."""
    want = get_num_threads()
    with _lock:
        pool = _default_pools.get(device_id)
        if pool is None or pool.num_threads != want:
            pool = _default_pools[device_id] = ThreadPool(want, device_id=device_id)
        return pool
