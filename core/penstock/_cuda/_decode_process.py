"""nvImageCodec decoders in processes of their own, beside the pipeline's in-process one.

Within one process nvImageCodec submits to the GPU's hardware JPEG engines one batch at a time, and
one process leaves the engines partly idle: on an H100, hardware decoding from 1/2/4/8 processes
ran 14.1k/22.5k/26.9k/27.8k ImageNet-sized JPEGs per second. A ``DecoderProcess`` is a
``DeviceDecoder`` in a child process, called like one (``decode``), so that the mixed decoders
split a batch between decoders in several processes.

A part of a batch goes through one of the child's two slots (two batches in flight, as in-process):
- the encoded bytes are copied into the slot's shared memory (a memfd passed to the child once),
- the child decodes each sample's window, packed, into the slot's device buffer (its own
  allocation, mapped into this process by CUDA IPC) and answers once they are there,
- one gather kernel on the pipeline's stream copies the windows into the output batch, and an event
  recorded after it frees the slot for its next part.
A child that fails or dies leaves its samples undecoded, and the host decodes them (with a warning).
The children end with the pipeline, and with this process however it ends (their pipe closes).
"""
from __future__ import annotations

import os
import threading
import traceback
import warnings
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from .._environment import non_negative
from .._parallel import _child
from .._parallel._shm import Segment, new_memfd
from ._context import DeviceContext
from ._ipc import ExportedBuffers
from ._nvimgcodec import DeviceDecoder

ENV_PROCESSES = "PENSTOCK_DECODER_PROCESSES"
_SLOTS = 2  # parts in flight per child: two batches decode at once
_START_TIMEOUT_S = 120.0


def process_count() -> int:
    """Decoder processes beside the pipeline's own decoder (``PENSTOCK_DECODER_PROCESSES``, none by
    default). They raise a pipeline's rate when nothing else in the process wants the GIL or the
    GPU. Beside a training loop they cost more than they bring: a part's way out and back (shared
    memory, the pipe, the answer's thread, the gather) takes the GIL several times, each take waiting
    for the loop's Python, so the batch waits for its slowest part; and the child's CUDA context
    takes turns on the GPU with the training's (docs/benchmarks.md)."""
    return non_negative(ENV_PROCESSES, 0, "a number of processes (0 or more)")


def _window_offsets(windows: np.ndarray, channels: np.ndarray) -> tuple[np.ndarray, int]:
    """Where each sample's window starts in a slot's packed buffer (bytes), and the total."""
    sizes = windows[:, 2] * windows[:, 3] * channels
    offsets = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    return offsets, int(sizes.sum())


class _Slot:
    """One part in flight: the encoded bytes' shared memory, and the device buffer the child
    decodes into (mapped here), free again once ``released`` (an event on the pipeline's stream)."""

    def __init__(self, index: int):
        self.index = index
        self.encoded: Segment | None = None
        self.device_ptr = 0  # the child's buffer, mapped into this process
        self.released: Any = None  # recorded after the gather that read the buffer
        self.busy = False


class DecoderProcess:
    """A ``DeviceDecoder`` in a child process on the pipeline's device. It starts in the background:
    ``usable`` turns True once the child answered (until then, and after a failure, it takes no
    part of a batch)."""

    def __init__(self, ctx: Any, options: str, cpu_threads: int, hw_load: float, adaptive: bool, *, label: str):
        self.ctx = ctx
        self.label = label
        self.usable = False
        self._closed = False
        self._lock = threading.Lock()  # the connection's sends; the next request id; the pending answers
        self._free = threading.Condition()
        self._slots = [_Slot(i) for i in range(_SLOTS)]
        self._pending: dict[int, Future] = {}
        self._next_id = 0
        self.proc, self.conn = _child.start(__name__, "serve")
        self.conn.send((ctx.device_id, options, cpu_threads, hw_load, adaptive))
        self._receiver = threading.Thread(target=self._receive, daemon=True, name="penstock-decoder-process")
        self._receiver.start()

    # -- the child's answers ---------------------------------------------------------------------
    def _receive(self) -> None:
        try:
            if not self.conn.poll(_START_TIMEOUT_S):
                raise RuntimeError(f"did not start within {_START_TIMEOUT_S:.0f} s")
            first = self.conn.recv()
            if first[0] != "ready":
                raise RuntimeError(first[1])
            self.usable = True
            while True:
                rid, answer = self.conn.recv()
                with self._lock:
                    future = self._pending.pop(rid)
                future.set_result(answer)
        except (EOFError, OSError, RuntimeError) as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        was_usable, self.usable = self.usable, False
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            future.set_exception(RuntimeError(f"the decoder process ended ({exc})"))
        if not self._closed:
            code = self.proc.poll()
            why = f"exit code {code}" if code is not None else str(exc)
            warnings.warn(f"{self.label}: a decoder process {'failed' if was_usable else 'did not start'} "
                          f"({why}); the others and the host decode its share", RuntimeWarning, 2)

    def _request(self, message: tuple, fd: int = -1) -> Future:
        future: Future = Future()
        with self._lock:
            rid = self._next_id
            self._next_id += 1
            self._pending[rid] = future
            try:
                if fd >= 0:  # a new shared memory: its descriptor travels just before its first use
                    self.conn.send(("memfd",))
                    send_handle(self.conn, fd, self.proc.pid)
                self.conn.send((rid,) + message)
            except (OSError, ValueError) as exc:
                del self._pending[rid]
                future.set_exception(RuntimeError(f"the decoder process is gone ({exc})"))
        return future

    # -- slots ------------------------------------------------------------------------------------
    def _take_slot(self) -> _Slot:
        with self._free:
            while all(slot.busy for slot in self._slots):
                self._free.wait()
            slot = next(slot for slot in self._slots if not slot.busy)
            slot.busy = True
        if slot.released is not None:
            slot.released.synchronize()  # the last gather out of its device buffer is done
        return slot

    def _give_back(self, slot: _Slot) -> None:
        with self._free:
            slot.busy = False
            self._free.notify()

    # -- one part of a batch ------------------------------------------------------------------------
    def decode(self, encoded: np.ndarray, starts: np.ndarray, lengths: np.ndarray, shapes: np.ndarray,
               windows: np.ndarray, reverse: bool, out: Any, out_offsets: np.ndarray, ready: Any,
               orient: bool) -> tuple[np.ndarray, float]:
        """As ``DeviceDecoder.decode``: writes the decoded samples' windows into ``out`` (on the
        pipeline's stream, after ``ready``); returns which samples were written and the child's
        seconds. Samples of a failed child come back undecoded, for the host."""
        n = len(starts)
        if not self.usable or not n:
            return np.zeros(n, bool), 0.0
        slot = self._take_slot()
        try:
            lo = int(starts.min())
            span = int((starts + lengths).max()) - lo
            fd = -1
            if slot.encoded is None or slot.encoded.capacity < span:
                if slot.encoded is not None:
                    slot.encoded.close()
                fd, capacity = new_memfd(span + span // 8)
                slot.encoded = Segment(fd, capacity)
            # one copy of the span holding the part's samples (others' bytes between them included)
            np.frombuffer(slot.encoded.mm, np.uint8, span)[:] = encoded[lo:lo + span]
            channels = shapes[:, 2]
            packed, total = _window_offsets(windows, channels)
            answer = self._request(("decode", slot.index, slot.encoded.capacity, starts - lo, lengths, shapes,
                                    windows, bool(reverse), bool(orient), total), fd)
            try:
                decoded, seconds, handle, error = answer.result()
            except RuntimeError:  # the child is gone: its samples are the host's
                return np.zeros(n, bool), 0.0
            cp = self.ctx.cp
            with self.ctx.device:
                # the child's buffer grew: map the new one, also when the part then failed (the child
                # frees the outgrown buffer at the slot's next part, and that part's answer brings
                # no handle: a gather through the old mapping would read freed device memory)
                if handle is not None:
                    if slot.device_ptr:
                        cp.cuda.runtime.ipcCloseMemHandle(slot.device_ptr)
                        slot.device_ptr = 0
                    slot.device_ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)
                if error is not None:
                    raise RuntimeError(f"{self.label}: in a decoder process: {error}")
                i = np.nonzero(decoded)[0]
                if len(i):
                    win = np.zeros((len(i), 4), np.int64)
                    win[:, 2:] = windows[i, 2:]
                    self.ctx.kernels.gather_images(np.uint64(slot.device_ptr) + packed[i].astype(np.uint64),
                                                   win[:, 3] * channels[i], win, channels[i],
                                                   np.zeros(len(i), np.int64), out, out_offsets[i])
                slot.released = cp.cuda.Event(block=False, disable_timing=True)
                slot.released.record(self.ctx.stream)
            return decoded, seconds
        finally:
            self._give_back(slot)

    def close(self) -> None:
        """Once no batch decodes any more: the gathers out of the child's buffers end and the
        mappings go, then the child. The workers of a batch in flight may have queued a gather on
        the pipeline's stream after the pipeline waited for it, and the child's buffers go with the
        child."""
        if self._closed:
            return
        self._closed = True
        started, self.usable = self.usable, False
        if not started:  # still starting (or failed): nothing of it is in use
            self.proc.kill()
        with self.ctx.device:
            for slot in self._slots:
                if slot.released is not None:
                    slot.released.synchronize()
                if slot.device_ptr:
                    self.ctx.cp.cuda.runtime.ipcCloseMemHandle(slot.device_ptr)
                    slot.device_ptr = 0
        _child.stop(self.proc, self.conn, self._lock)
        for slot in self._slots:
            if slot.encoded is not None:
                slot.encoded.close()


# -- the child ----------------------------------------------------------------------------------------
class _Child:
    """The child's side: a ``DeviceDecoder`` and each slot's shared memory and device buffer."""

    def __init__(self, conn: Connection, ctx: Any, decoder: Any):
        self.conn = conn
        self.ctx = ctx
        self.decoder = decoder
        self.send_lock = threading.Lock()
        self.encoded: dict[int, Segment] = {}
        self.buffers = ExportedBuffers(ctx)  # per slot, the device buffer the parent maps
        self.fds: list[int] = []  # descriptors received, each for the next request that grows a slot

    def decode(self, rid: int, slot: int, capacity: int, starts, lengths, shapes, windows, reverse, orient,
               total: int, fd: int) -> None:
        handle = None
        try:
            if fd >= 0:
                old = self.encoded.pop(slot, None)
                if old is not None:
                    old.close()
                self.encoded[slot] = Segment(fd, capacity)
            encoded = np.frombuffer(self.encoded[slot].mm, np.uint8)
            memory, handle = self.buffers.ensure(slot, total)
            cp = self.ctx.cp
            packed, _ = _window_offsets(windows, shapes[:, 2])
            with self.ctx.device:
                out = cp.ndarray((memory.size,), np.uint8, cp.cuda.MemoryPointer(memory, 0))
                ready = cp.cuda.Event(block=False, disable_timing=True)
                ready.record(self.ctx.stream)
                decoded, seconds = self.decoder.decode(encoded, starts, lengths, shapes, windows, reverse, out,
                                                       packed, ready, orient)
                done = cp.cuda.Event(block=False, disable_timing=True)
                done.record(self.ctx.stream)
                done.synchronize()
            answer = (decoded, seconds, handle, None)
        except Exception:  # noqa: BLE001 - the parent raises it, naming the operator
            answer = (np.zeros(len(starts), bool), 0.0, handle, traceback.format_exc(limit=4))
        with self.send_lock:
            self.conn.send((rid, answer))


def serve(fd: int) -> None:
    """The child's main loop: decodes the parts the parent sends until its pipe closes."""
    conn = Connection(fd)
    try:
        device_id, options, cpu_threads, hw_load, adaptive = conn.recv()
    except (EOFError, OSError):  # the parent ended before it sent the settings
        _child.end()
    try:
        ctx = DeviceContext(device_id)
        decoder = DeviceDecoder(ctx, options, cpu_threads, hw_load, adaptive)
        greeting: tuple = ("ready", os.getpid())
    except Exception as exc:  # noqa: BLE001 - told to the parent, which decodes without this process
        decoder, greeting = None, ("error", f"{type(exc).__name__}: {exc}")
    try:
        conn.send(greeting)
    except OSError:  # BrokenPipeError: the parent ended while this process started (a short job)
        _child.end()
    if decoder is None:
        _child.end()
    child = _Child(conn, ctx, decoder)
    parts = ThreadPoolExecutor(_SLOTS, thread_name_prefix="penstock-decode-part")
    fd_for_next = -1
    for message in _child.requests(conn):
        if message[0] == "memfd":
            fd_for_next = recv_handle(conn)
            continue
        rid, kind, slot, capacity, *rest = message
        parts.submit(child.decode, rid, slot, capacity, *rest, fd_for_next)
        fd_for_next = -1
    _child.end()  # (nvImageCodec's teardown could wait for threads still decoding)
