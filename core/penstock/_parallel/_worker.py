"""The worker process: runs tasks of parallel external sources, writes batches to shared memory.

Messages from the pipeline: ("task", source, key, payload), ("release", slot), ("stop",).
Replies: ("ok", key, slot, capacity, new_slot, samples, outputs) followed, for a new slot, by its
file descriptor; ("stop", key) for StopIteration; ("error", key, exception, traceback, sample).
"""
from __future__ import annotations

import ctypes
import os
import pickle
import signal
import traceback
from multiprocessing.reduction import send_handle
from typing import Any

import numpy as np

from ._shm import Segment, aligned

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """The kernel kills this worker when the pipeline's process dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent-pid poll below still ends the worker
        pass


def load_sources(blob: Any, pickler: Any) -> dict:
    """Spawn: the sources arrive pickled with the pipeline's py_callback_pickler."""
    if not isinstance(blob, bytes):
        return blob  # fork: inherited as they are
    module, _, loads_kwargs = pickler
    if isinstance(module, str):
        import importlib
        module = importlib.import_module(module)
    return module.loads(blob, **loads_kwargs)


def _output_arrays(data: Any, label: str) -> tuple[np.dtype, np.ndarray, list]:
    """One output of a batch as (dtype, shapes, contiguous arrays to write back to back)."""
    from ..operators.external_source import _host_array, sample_arrays, sample_shapes
    from ..tensors import TensorListCPU
    if isinstance(data, TensorListCPU):
        data = [data._sample_array(i) for i in range(len(data))]
    if isinstance(data, (list, tuple)):
        arrays = sample_arrays(data, label)
        dtype = arrays[0].dtype if arrays else np.dtype(np.uint8)
        return dtype, sample_shapes(arrays), arrays
    arr = np.ascontiguousarray(_host_array(data, label))
    if arr.ndim == 0:
        raise RuntimeError(f"{label}: the source gave a 0-D array; a batch needs a leading sample dimension")
    shapes = np.tile(np.array(arr.shape[1:], np.int64), (arr.shape[0], 1)).reshape(arr.shape[0], arr.ndim - 1)
    return arr.dtype, shapes, [arr]


class _Slots:
    """This worker's shared-memory slots; the pipeline hands each back once it copied it out."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.free: list[int] = []

    def write(self, outputs: list, hint: int, samples: int, pool: Any) -> tuple[int, int, bool, list]:
        """Writes every output, samples back to back from an aligned start, with one native copy."""
        from .. import _engine
        meta, srcs, offsets, start = [], [], [], 0
        for dtype, shapes, arrays in outputs:
            meta.append((dtype.str, shapes, start))
            pos = start
            for a in arrays:
                srcs.append(a)
                offsets.append(pos)
                pos += a.nbytes
            start = aligned(pos)
        new = not self.free
        if new:
            self.segments.append(Segment.create(max(start, hint * samples)))
            slot = len(self.segments) - 1
        else:
            slot = self.free.pop()
            if self.segments[slot].capacity < start:
                self.segments[slot].grow(start)
        seg = self.segments[slot]
        dst = np.frombuffer(seg.mm, np.uint8, start)
        _engine.gather(pool, srcs, np.array(offsets, np.int64), dst)
        del dst  # the mapping must have no views when it is remapped
        return slot, seg.capacity, new, meta


def worker_main(index: int, conn: Any, sources_blob: Any, pickler: Any, parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the pipeline's to handle
    _die_with_parent()
    from .. import _engine
    from ..operators.external_source import _SourceCaller
    from ..types import SampleInfo
    pool = _engine.ThreadPool(1)
    sources = load_sources(sources_blob, pickler)
    callers: dict[str, _SourceCaller] = {}
    slots = _Slots()
    while True:
        if not conn.poll(1.0):
            if os.getppid() != parent_pid:
                return
            continue
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        if msg[0] == "release":
            slots.free.append(msg[1])
            continue
        _, name, key, payload = msg
        spec = sources[name]
        caller = callers.get(name)
        if caller is None:  # an iterator source is created in the one worker that runs it
            caller = callers[name] = _SourceCaller(spec["source"], spec["batch"], spec["batch_info"],
                                                   spec["cycle"], spec["num_outputs"])
        label, sample = spec["label"], None
        try:
            if spec["batch"]:
                epoch, iteration = payload
                results = caller.outputs(caller.call_batch(epoch, iteration), label)
                outputs = [_output_arrays(r, label) for r in results]
            else:
                per_sample = []
                for info in payload:
                    sample = info[1]
                    per_sample.append(caller.sample_outputs(caller.call_sample(SampleInfo(*info)), label, sample))
                sample = None
                outputs = [_output_arrays([s[o] for s in per_sample], label) for o in range(caller.k)]
            samples = len(outputs[0][1])
            slot, capacity, new, meta = slots.write(outputs, spec["bytes_per_sample_hint"] or 0, samples, pool)
        except StopIteration:
            conn.send(("stop", key))
            continue
        except Exception as exc:  # noqa: BLE001 - reported at the pipeline's run()
            tb = "".join(traceback.format_exception(exc))
            try:
                blob = pickle.dumps(exc)
                pickle.loads(blob)
            except Exception:  # noqa: BLE001 - an exception that does not travel: its text does
                blob = None
            conn.send(("error", key, blob, tb, sample, f"{type(exc).__name__}: {exc}"))
            continue
        conn.send(("ok", key, slot, capacity, new, samples, meta))
        if new:
            send_handle(conn, slots.segments[slot].fd, parent_pid)
