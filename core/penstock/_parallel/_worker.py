"""The worker process: runs tasks of parallel external sources and writes each batch (or its part
of a batch) once, straight into the pipeline's shared-memory region at its final offsets.

Messages from the pipeline: ("region", id, capacity) followed by the region's file descriptor;
("task", source, key, payload, region, capacity, direct); ("place", key, capacity, starts);
("drop", key); ("stop",).
Replies: ("ready",) once, when the sources are loaded; ("ok", key, capacity, outputs, nbytes);
("sizes", key, bytes per output) from a task that is one part of a batch (not ``direct``): its
outputs wait here until the pipeline knows every part's size and answers "place" with where they
go; ("stop", key) for StopIteration; ("error", key, exception, traceback, sample, text).

The worker's standard error (fd 2, with Python's and native code's output, an uncaught exception's
traceback and, through faulthandler, the stacks at a fatal signal) goes to a pipe the pipeline
reads, so the error reporting the worker's death can quote it.

A second connection, the control one, is the worker's lifeline: its thread ``_watch_parent``
ends the worker as soon as the pipeline's process is gone (its end of the connection closes
then, whichever thread built the pipeline and however the process ended) and answers
("report", n) with (n, what the worker is running, every thread's stack).
"""
from __future__ import annotations

import collections
import faulthandler
import os
import pickle
import signal
import sys
import threading
import traceback
from multiprocessing.reduction import recv_handle
from typing import Any

import numpy as np

from .._sources import SourceCaller, host_array, sample_arrays, sample_shapes, thread_stacks
from ._shm import Segment, output_starts


class Running:
    """What the worker's main thread is running, for the reports: a source's name, the
    iteration and epoch, and the sample in per-sample mode (None between tasks)."""

    def __init__(self) -> None:
        self.source: str | None = None
        self.epoch = self.iteration = 0
        self.sample: int | None = None

    def report(self) -> dict:
        return {"source": self.source, "epoch": self.epoch, "iteration": self.iteration,
                "sample": self.sample, "stacks": thread_stacks()}


def _watch_parent(control: Any, running: Running) -> None:
    """Ends the worker when the pipeline's process is gone: the pipeline's end of ``control`` is
    held by that process alone (closed in every process forked from it), so the connection ends
    exactly when the process does. Unlike PR_SET_PDEATHSIG, which fires when the *thread* that
    started the worker exits, this ties the worker to the process. Meanwhile it answers reports."""
    try:
        while True:
            _, n = control.recv()
            control.send((n, running.report()))
    except (EOFError, OSError):
        pass
    os._exit(0)


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
    from ..tensors import TensorListCPU
    if isinstance(data, TensorListCPU):
        data = [data._sample_array(i) for i in range(len(data))]
    if isinstance(data, (list, tuple)):
        arrays = sample_arrays(data, label)
        dtype = arrays[0].dtype if arrays else np.dtype(np.uint8)
        return dtype, sample_shapes(arrays), arrays
    arr = np.ascontiguousarray(host_array(data, label))
    if arr.ndim == 0:
        raise RuntimeError(f"{label}: the source gave a 0-D array; a batch needs a leading sample dimension")
    shapes = np.tile(np.array(arr.shape[1:], np.int64), (arr.shape[0], 1)).reshape(arr.shape[0], arr.ndim - 1)
    return arr.dtype, shapes, [arr]


def _nbytes(output: tuple) -> int:
    return sum(a.nbytes for a in output[2])


class _Writer:
    """The regions this worker has been given, and the parts of batches waiting for a place."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.regions: dict[int, Segment] = {}
        self.pending: dict[int, tuple[int, list]] = {}  # key -> (region, outputs)

    def write(self, rid: int, capacity: int, outputs: list, starts: list[int], grow: bool) -> tuple[int, list, int]:
        """Every output's samples back to back from its start, with one native copy."""
        from .. import _engine
        seg = self.regions[rid]
        seg.ensure(capacity)
        meta, srcs, offsets, end = [], [], [], 0
        for (dtype, shapes, arrays), start in zip(outputs, starts):
            meta.append((dtype.str, shapes, start))
            pos = start
            for a in arrays:
                srcs.append(a)
                offsets.append(pos)
                pos += a.nbytes
            end = max(end, pos)
        if end > seg.capacity:
            if not grow:
                raise RuntimeError(f"internal error: region {rid} of {seg.capacity} bytes is placed at {end}")
            seg.grow(end)  # this batch has the region to itself
        dst = np.frombuffer(seg.mm, np.uint8, seg.capacity)
        _engine.gather(self.pool, srcs, np.array(offsets, np.int64), dst)
        del dst  # the mapping must have no views when it is remapped
        return seg.capacity, meta, sum(a.nbytes for a in srcs)


def _stderr_to(pipe: Any) -> None:
    """fd 2 becomes ``pipe`` and sys.stderr a stream on it (a forked worker inherits whatever object
    the pipeline's sys.stderr was, perhaps one that is not fd 2)."""
    if sys.stderr is not None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    os.dup2(pipe.fileno(), 2)
    pipe.close()
    sys.stderr = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)
    faulthandler.enable(sys.stderr, all_threads=True)


def worker_main(index: int, conn: Any, control: Any, stderr: Any, sources_blob: Any, pickler: Any) -> None:
    _stderr_to(stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the pipeline's to handle
    running = Running()
    threading.Thread(target=_watch_parent, args=(control, running), name="penstock-es-lifeline",
                     daemon=True).start()
    from .. import _engine
    from ..types import SampleInfo
    sources = load_sources(sources_blob, pickler)
    conn.send(("ready",))
    callers: dict[str, SourceCaller] = {}
    writer = _Writer(_engine.ThreadPool(1))
    later: collections.deque = collections.deque()  # tasks and stop read while serving placements

    def receive() -> tuple:
        msg = conn.recv()
        if msg[0] == "region":  # its descriptor follows at once on the socket
            writer.regions[msg[1]] = Segment(recv_handle(conn), msg[2])
        return msg

    def report_error(key: int, exc: Exception, sample: int | None) -> None:
        tb = "".join(traceback.format_exception(exc))
        try:
            blob = pickle.dumps(exc)
            pickle.loads(blob)
        except Exception:  # noqa: BLE001 - an exception that does not travel: its text does
            blob = None
        conn.send(("error", key, blob, tb, sample, f"{type(exc).__name__}: {exc}"))

    def place(msg: tuple) -> None:
        """Writes a waiting part of a batch where the pipeline put it (or forgets it: "drop")."""
        entry = writer.pending.pop(msg[1], None)
        if entry is None or msg[0] == "drop":
            return
        rid, outputs = entry
        try:
            capacity, meta, nbytes = writer.write(rid, msg[2], outputs, msg[3], grow=False)
        except Exception as exc:  # noqa: BLE001 - reported for this part, not for the task running now
            report_error(msg[1], exc, None)
            return
        conn.send(("ok", msg[1], capacity, meta, nbytes))

    def serve_placements() -> None:
        """Between samples: parts of earlier batches are written as soon as their place is known."""
        while conn.poll(0):
            msg = receive()
            if msg[0] in ("place", "drop"):
                place(msg)
            elif msg[0] != "region":
                later.append(msg)

    while True:
        running.source = None  # between tasks
        if later:
            msg = later.popleft()
        else:
            try:
                msg = receive()
            except (EOFError, OSError):
                return
        if msg[0] == "stop":
            return
        if msg[0] == "region":
            continue
        if msg[0] in ("place", "drop"):
            place(msg)
            continue
        _, name, key, payload, rid, capacity, direct = msg
        spec = sources[name]
        caller = callers.get(name)
        if caller is None:  # an iterator source is created in the one worker that runs it
            caller = callers[name] = SourceCaller(spec["source"], spec["batch"], spec["batch_info"],
                                                   spec["cycle"], spec["num_outputs"])
        label, sample = spec["label"], None
        running.source = name
        try:
            if spec["batch"]:
                running.epoch, running.iteration = payload
                results = caller.outputs(caller.call_batch(*payload), label)
                outputs = [_output_arrays(r, label) for r in results]
            else:
                per_sample = []
                for info in payload:
                    sample = running.sample = info[1]
                    running.iteration, running.epoch = info[2], info[3]
                    per_sample.append(caller.sample_outputs(caller.call_sample(SampleInfo(*info)), label, sample))
                    serve_placements()
                sample = running.sample = None
                outputs = [_output_arrays([s[o] for s in per_sample], label) for o in range(caller.k)]
            if direct:
                starts, _ = output_starts([_nbytes(o) for o in outputs])
                capacity, meta, nbytes = writer.write(rid, capacity, outputs, starts, grow=True)
                reply: tuple = ("ok", key, capacity, meta, nbytes)
            else:
                writer.pending[key] = (rid, outputs)
                reply = ("sizes", key, [_nbytes(o) for o in outputs])
        except StopIteration:
            conn.send(("stop", key))
            continue
        except Exception as exc:  # noqa: BLE001 - reported at the pipeline's run()
            report_error(key, exc, sample)
            continue
        conn.send(reply)
