"""The parent's side of a decoder process (_cuda._decode_process.DecoderProcess.decode) with stand-ins
for CUDA and the child: which device buffer of the child each part's gather reads. Runs without a GPU
(tests/test_image_decode_processes_gpu.py runs the real children)."""
import contextlib
import threading
import types
from concurrent.futures import Future

import numpy as np
import pytest

from penstock._cuda import _decode_process


class _Runtime:
    """CUDA IPC as the parent uses it: a mapping address per opened handle."""

    def __init__(self):
        self.mapped: dict[int, bytes] = {}
        self.closed: list[int] = []

    def ipcOpenMemHandle(self, handle: bytes) -> int:
        ptr = 0x1000 * (len(self.mapped) + len(self.closed) + 1)
        self.mapped[ptr] = handle
        return ptr

    def ipcCloseMemHandle(self, ptr: int) -> None:
        self.closed.append(ptr)
        del self.mapped[ptr]


class _Event:
    def __init__(self, **kw):
        pass

    def record(self, stream):
        pass

    def synchronize(self):
        pass


class _Kernels:
    def __init__(self, runtime: _Runtime):
        self.runtime = runtime
        self.read: list[bytes] = []  # per gather: the child's buffer (its handle) its first sample reads

    def gather_images(self, pointers, pitches, windows, channels, reverse, dst, dst_offsets):
        base = max(p for p in self.runtime.mapped if p <= int(pointers[0]))
        self.read.append(self.runtime.mapped[base])


def _decoder_process(answers: list) -> tuple:
    """A DecoderProcess whose child answers ``answers`` in turn, and the stand-ins it uses."""
    runtime = _Runtime()
    kernels = _Kernels(runtime)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Event=_Event))
    ctx = types.SimpleNamespace(cp=cp, device=contextlib.nullcontext(), stream=None, kernels=kernels)
    proc = object.__new__(_decode_process.DecoderProcess)
    proc.ctx, proc.label, proc.usable = ctx, "decoders.image_random_crop", True
    proc._free = threading.Condition()
    proc._slots = [_decode_process._Slot(0)]  # one slot: every part goes through the same buffer

    def request(message, fd=-1):
        future = Future()
        future.set_result(answers.pop(0))
        return future
    proc._request = request
    return proc, runtime, kernels


def _part(proc, n=2):
    encoded = np.arange(100, dtype=np.uint8)
    shapes = np.tile([[8, 6, 3]], (n, 1)).astype(np.int64)
    windows = np.tile([[0, 0, 8, 6]], (n, 1)).astype(np.int64)
    return proc.decode(encoded, np.arange(n, dtype=np.int64) * 10, np.full(n, 10, np.int64), shapes, windows, False,
                       None, np.arange(n, dtype=np.int64) * 144, None, False)


def test_a_part_that_failed_after_its_buffer_grew_maps_the_new_buffer_for_the_next_parts():
    ok = np.ones(2, bool)
    proc, runtime, kernels = _decoder_process([
        (ok, 0.1, b"first", None),
        # the child grew the slot's buffer, then failed: it retires the first buffer and frees it
        # at the slot's next part
        (np.zeros(2, bool), 0.0, b"second", "Traceback: decoding failed"),
        (ok, 0.1, None, None),  # the grown buffer holds this part: no new handle
    ])
    assert _part(proc)[0].all()
    with pytest.raises(RuntimeError, match="decoders.image_random_crop: in a decoder process: Traceback"):
        _part(proc)
    assert _part(proc)[0].all()
    assert kernels.read == [b"first", b"second"]  # not the first buffer again, which the child freed
    assert list(runtime.mapped.values()) == [b"second"] and len(runtime.closed) == 1
    assert not proc._slots[0].busy


def test_closing_waits_for_the_gathers_and_unmaps_before_the_child_ends():
    order = []
    proc, runtime, _ = _decoder_process([(np.ones(2, bool), 0.1, b"first", None)])
    _part(proc)
    proc._slots[0].released = types.SimpleNamespace(synchronize=lambda: order.append("gather done"))
    close_mapping = runtime.ipcCloseMemHandle
    runtime.ipcCloseMemHandle = lambda ptr: (order.append("unmapped"), close_mapping(ptr))
    proc._closed, proc._lock = False, threading.Lock()
    proc.conn = types.SimpleNamespace(send=lambda message: order.append("child told to end"),
                                      close=lambda: None)
    proc.proc = types.SimpleNamespace(wait=lambda timeout=None: order.append("child ended"))
    proc.close()
    # a gather that a batch in flight queued after the pipeline's stream was waited for still reads
    # the child's buffer: it ends, and the mapping goes, before the child frees the buffer
    assert order == ["gather done", "unmapped", "child told to end", "child ended"]
    assert not runtime.mapped
