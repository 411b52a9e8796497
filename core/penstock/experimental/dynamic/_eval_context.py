"""``EvalContext``: where operator calls run (device, host thread pool, CUDA stream), and the
worker thread that runs eager-mode calls in the background."""
from __future__ import annotations

import queue
import threading
import time
import weakref
from typing import Any

from ... import _cuda
from . import _invocation, _stream
from ._checkpoint import Checkpoint
from ._device import CPU, Device
from ._thread_pool import ThreadPool, default_pool

__all__ = ["EvalContext"]

_local = threading.local()


class EvalContext:
    """The device, thread pool and CUDA stream operator calls run with; a context manager.

    ``num_threads`` makes a pool of its own (``thread_pool`` gives one; neither: the default pool,
    sized by ``set_num_threads``). ``cuda_stream``: the stream GPU operators run on (not given: the
    thread's current stream, else the device's default stream, else a stream of the context's own).
    Leaving the outermost ``with`` of a context evaluates every call made in it. A context may be
    active in one thread at a time; each thread has its own default context.
    """

    def __init__(self, *, num_threads: int | None = None, device_id: int | None = None,
                 cuda_stream: Any = None, thread_pool: ThreadPool | None = None):
        self._device = Device("gpu", device_id) if device_id is not None else Device.current()
        if thread_pool is not None:
            if num_threads is not None:
                raise ValueError("`thread_pool` and `num_threads` cannot be given together")
            if thread_pool.device_id != self._device.device_id:
                raise ValueError(f"Device ID clash: the context's device is {self._device} but the "
                                 f"thread pool's device_id is {thread_pool.device_id}")
        elif num_threads is not None:
            thread_pool = ThreadPool(num_threads, device_id=self._device.device_id)
        self._thread_pool = thread_pool
        self._cuda_stream = _stream.stream(stream=cuda_stream, device_id=device_id) if cuda_stream is not None else None
        self._own_stream: Any = None
        self._device_contexts: dict[int, Any] = {}
        self._lock = threading.RLock()
        self._active = 0
        self._recorded: list[weakref.ref] = []
        self._prune_at = 64
        self._queue: queue.SimpleQueue | None = None
        self._checkpoint: Checkpoint | None = None

    # -- which context is current
    @staticmethod
    def current() -> "EvalContext":
        """The innermost context entered on this thread, else the thread's default context."""
        stack = getattr(_local, "stack", None)
        return stack[-1] if stack else EvalContext.default()

    @staticmethod
    def default() -> "EvalContext":
        """This thread's default context for the current device."""
        defaults = getattr(_local, "defaults", None)
        if defaults is None:
            defaults = _local.defaults = {}
        dev = Device.current()
        ctx = defaults.get(dev)
        if ctx is None:
            ctx = defaults[dev] = EvalContext(device_id=dev.device_id)
        return ctx

    def __enter__(self) -> "EvalContext":
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("An EvalContext cannot be active in two threads simultaneously")
        self._active += 1
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self)
        if self._device.device_type == "gpu":
            self._device.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._active -= 1
            if self._active == 0:
                self.evaluate_all()
        finally:
            if self._device.device_type == "gpu":
                self._device.__exit__(*exc)
            _local.stack.pop()
            self._lock.release()

    # -- what it runs with
    @property
    def device_id(self) -> int | None:
        return self._device.device_id

    @property
    def thread_pool(self) -> ThreadPool:
        return self._thread_pool or default_pool(self._device.device_id)

    @property
    def num_threads(self) -> int:
        return self.thread_pool.num_threads

    @property
    def cuda_stream(self) -> Any:
        """The stream GPU operators of this context run on (None on the CPU)."""
        if self._cuda_stream is not None:
            return self._cuda_stream
        if self._device == CPU:
            return None
        current = _stream.get_current_stream()
        if current is not None and current.device_id == self._device.device_id:
            return current
        if self._own_stream is None:
            self._own_stream = _stream.stream(device_id=self._device.device_id)
        return self._own_stream

    @property
    def checkpoint(self) -> Checkpoint:
        """The context's checkpoint (``ndd.checkpoint.current()`` in it); it lasts as long as the
        context: ``clear()`` it to start another."""
        if self._checkpoint is None:
            self._checkpoint = Checkpoint()
        return self._checkpoint

    def _gpu(self) -> Any:
        """The device context GPU kernels run in: this context's device and stream."""
        if self._device == CPU:
            raise RuntimeError(f"a GPU operator was called in a context of the CPU; {_cuda.INSTALL_HINT}"
                               if not _cuda.available() else "a GPU operator was called in a context of the CPU")
        s = self.cuda_stream
        ctx = self._device_contexts.get(s.handle)
        if ctx is None:
            ctx = self._device_contexts[s.handle] = _cuda.DeviceContext(self._device.device_id, s.cupy_stream)
        return ctx

    # -- calls made in it
    def _record(self, invocation: _invocation.Invocation) -> None:
        if len(self._recorded) >= self._prune_at:  # finished and dropped calls leave the list now and then
            self._recorded = [r for r in self._recorded
                              if (inv := r()) is not None and inv.state is not _invocation.DONE]
            self._prune_at = 2 * len(self._recorded) + 64
        self._recorded.append(weakref.ref(invocation))

    def evaluate_all(self) -> None:
        """Evaluates every call made in this context that has not run yet."""
        pending = [inv for r in self._recorded if (inv := r()) is not None]
        self._recorded = []
        if pending:
            _invocation.evaluate(pending)

    def _schedule(self, invocation: _invocation.Invocation) -> None:
        """Hands an eager-mode call to this context's worker thread."""
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            threading.Thread(target=_work, args=(self._queue,), name="penstock-dynamic", daemon=True).start()
            weakref.finalize(self, self._queue.put, None)
        self._queue.put(invocation)


# The worker gathers calls until none has come for QUIET_S (at most MAX_GATHER_S): a chain of calls
# made one after another then runs as one graph, so kernels see their consumers (a decode feeding a
# downscaling resize decodes smaller). A caller reading a result meanwhile runs it at once itself.
QUIET_S = 0.0005
MAX_GATHER_S = 0.005


def _work(inbox: queue.SimpleQueue) -> None:
    """The eager-mode worker: runs the calls handed to it, each time together with the calls
    handed to it just after (see QUIET_S). None (the context is gone) ends it."""
    while True:
        batch = [inbox.get()]
        deadline = time.monotonic() + MAX_GATHER_S
        while batch[-1] is not None:
            try:
                batch.append(inbox.get(timeout=min(QUIET_S, max(deadline - time.monotonic(), 0.0))))
            except queue.Empty:
                break
        stop = batch[-1] is None
        calls = [inv for inv in batch if inv is not None]
        if calls:
            _invocation.evaluate(calls)
        if stop:
            return
        batch = calls = []  # the finished calls are not held while waiting
