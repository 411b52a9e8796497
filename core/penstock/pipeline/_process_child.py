"""The pipeline process's side (``_process``): it builds the pipeline the user's process sent, runs
the iterations it asks for and sends their outputs back, the GPU ones through its output slots."""
from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any, Sequence

from .. import _engine
from .._executor import Iteration
from .._cuda._ipc import ExportedBuffers
from .._parallel import _child
from ..tensors import TensorListCPU, TensorListGPU
from ._pipeline import Pipeline
from ._process import ENV

_ALIGN = 256  # each output's place in a slot: any dtype views it, as cudaMalloc's blocks are


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _pickled_error(exc: BaseException) -> bytes:
    try:
        return pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - an exception that does not pickle travels as its text
        return pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))


class _Child:
    """The child's side: the pipeline, its output slots and the thread that ships iterations."""

    def __init__(self, conn: Connection, pipe: Any, slots: int, copied: list | None):
        self.conn = conn
        self.pipe = pipe
        self.ctx = pipe._gpu
        self.send_lock = threading.Lock()
        self.free = threading.Condition()
        self.idle = list(range(slots))
        self.buffers = None if self.ctx is None else ExportedBuffers(self.ctx)  # per slot, mapped by the parent
        self.written: list[Any] = []
        self.copied: list[int] = []
        if self.ctx is not None:
            cp = self.ctx.cp
            with self.ctx.device:
                self.written = [cp.cuda.Event(block=False, disable_timing=True, interprocess=True)
                                for _ in range(slots)]
                self.copied = [cp.cuda.runtime.ipcOpenEventHandle(h) for h in copied]

    def send(self, message: Any) -> None:
        with self.send_lock:
            self.conn.send(message)

    def greeting(self) -> tuple:
        cp = None if self.ctx is None else self.ctx.cp
        return ("ready", None if cp is None else [cp.cuda.runtime.ipcGetEventHandle(e.ptr) for e in self.written])

    def ship(self, iterations: Any) -> None:
        """Waits for each iteration in turn and sends its outputs (until the process ends)."""
        executor = self.pipe._executor
        while True:
            it = iterations.get()
            try:
                results = executor.wait(it)
                message = self.outputs(it.index, results)
            except BaseException as exc:  # noqa: BLE001 - the parent raises it at this iteration
                message = ("error", it.index, _pickled_error(exc))
            finally:
                executor.release(it)
            self.send(message)

    def outputs(self, index: int, results: Sequence[Any]) -> tuple:
        on_gpu = [tl for tl in results if isinstance(tl, TensorListGPU)]
        if not on_gpu:
            return ("done", index, -1, [_host_description(tl) for tl in results])
        starts, end = [], 0
        for tl in on_gpu:
            starts.append(end)
            end = _aligned(end + tl._buf.nbytes)
        slot = self.take_slot()
        try:
            self.write(slot, on_gpu, starts, end)
        except BaseException:
            self.give_back(slot)
            raise
        places = iter(starts)
        described = []
        for tl in results:
            if isinstance(tl, TensorListGPU):
                described.append(("gpu", tl._buf.dtype.str, tl._shapes, tl._offsets, tl._layout, tl._source_info,
                                  next(places), tl._buf.nbytes))
            else:
                described.append(_host_description(tl))
        return ("done", index, slot, described)

    def write(self, slot: int, on_gpu: Sequence[TensorListGPU], starts: Sequence[int], end: int) -> None:
        """Queues the copies of the GPU outputs into ``slot`` (at ``starts``, ``end`` bytes in all),
        after the parent's copy out of the slot's last batch; then the slot's event."""
        ctx, cp = self.ctx, self.ctx.cp
        stream = int(ctx.stream.ptr)
        with ctx.device:
            memory, handle = self.buffers.ensure(slot, end)
            if handle is not None:
                self.send(("buffer", slot, handle))
            base = memory.ptr
            _engine.wait_event(stream, self.copied[slot])  # the parent's copy out of the slot's last batch
            for tl, start in zip(on_gpu, starts):
                if tl._event is not None:
                    _engine.wait_event(stream, int(tl._event.ptr))
                buf = tl._buf if tl._buf.flags.c_contiguous else cp.ascontiguousarray(tl._buf)
                cp.cuda.runtime.memcpyAsync(base + start, buf.data.ptr, buf.nbytes,
                                            cp.cuda.runtime.memcpyDeviceToDevice, stream)
            _engine.record_event(int(self.written[slot].ptr), stream)

    def take_slot(self) -> int:
        with self.free:
            while not self.idle:
                self.free.wait()
            return self.idle.pop(0)

    def give_back(self, slot: int) -> None:
        with self.free:
            self.idle.append(slot)
            self.free.notify()

    def stats(self) -> dict:
        return {name: (s.runs, s.seconds, s.output_bytes, s.total_bytes)
                for name, s in self.pipe._executor.stats.items()}


def _host_description(tl: TensorListCPU) -> tuple:
    return ("cpu", tl._buf, tl._shapes, tl._offsets, tl._layout, tl._source_info)


def serve(fd: int) -> None:
    """The child's main loop: builds the pipeline, then runs the iterations the parent sends until
    its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle; its end ends this
    os.environ[ENV] = "off"
    os.environ["PENSTOCK_CONSUMER_FIRST_US"] = "0"  # no user's Python here to give way to
    conn = Connection(fd)
    try:
        serialized, overrides, slots, copied = conn.recv()
    except (EOFError, OSError):  # the parent ended before it sent the pipeline
        _child.end()
    try:
        pipe = Pipeline.deserialize(serialized, **overrides)
        child = _Child(conn, pipe, slots, copied)
        greeting = child.greeting()
    except Exception as exc:  # noqa: BLE001 - told to the parent, which runs the pipeline itself
        child, greeting = None, ("error", f"{type(exc).__name__}: {exc}")
    try:
        conn.send(greeting)
    except OSError:  # the parent ended while this process started
        _child.end()
    if child is None:
        _child.end()
    iterations: queue.SimpleQueue = queue.SimpleQueue()
    shipper = threading.Thread(target=child.ship, args=(iterations,), daemon=True, name="penstock-ship")
    shipper.start()
    for message in _child.requests(conn):
        kind = message[0]
        if kind == "run":
            _, index, epoch, batch_size = message
            it = Iteration(index, epoch, batch_size, {})
            pipe._executor.submit(it)
            iterations.put(it)
        elif kind == "free":
            child.give_back(message[1])
        elif kind == "stats":
            child.send(("stats", child.stats()))
    _child.end()
