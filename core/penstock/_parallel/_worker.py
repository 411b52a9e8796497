"""The worker process: runs tasks of parallel external sources and writes each batch (or its part
of a batch) once, straight into the pipeline's shared-memory region at its final offsets.

A batch split over workers (per-sample mode) is placed by the workers themselves: each part's
worker tells the workers of the other parts its size (per output) over a direct pipe, and once a
worker knows every part's size it writes its own part where the layout puts it: no round trip
through the pipeline, and the last part to finish is written at once.

Messages from the pipeline: ("region", id, capacity) followed by the region's file descriptor;
("task", source, key, payload, region, capacity, split) where split is None for a whole batch or
(batch id, part index, worker of each part); ("drop", key, batch id) for a part of a batch that
failed;
("stop",). Between workers: ("sizes", batch id, part index, parts, bytes per output).
Replies: ("ok", key, capacity, outputs, nbytes); ("dropped", key); ("stop", key) for
StopIteration; ("error", key, exception, traceback, sample, text).
"""
from __future__ import annotations

import collections
import ctypes
import multiprocessing.connection
import os
import pickle
import signal
import traceback
from multiprocessing.reduction import recv_handle
from typing import Any

import numpy as np

from ._shm import Segment, output_starts

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


def _nbytes(output: tuple) -> int:
    return sum(a.nbytes for a in output[2])


class _Writer:
    """The regions this worker has been given, and the parts of split batches waiting for the sizes
    of the other parts."""

    def __init__(self, pool: Any, conn: Any, peers: dict) -> None:
        self.pool = pool
        self.conn = conn
        self.peers = peers
        self.regions: dict[int, Segment] = {}
        self.sizes: dict[int, dict[int, list[int]]] = {}  # batch id -> part -> bytes per output
        self.local: dict[int, dict[int, tuple]] = {}      # batch id -> part -> (key, region, capacity, outputs)
        self.dropped: collections.deque = collections.deque(maxlen=256)  # recent failed batches

    def write(self, rid: int, capacity: int, outputs: list, starts: list[int]) -> tuple[int, list, int]:
        """Every output's samples back to back from its start, with one native copy. Every writer
        of a region grows it to the same size (computed from the capacity all of them were told),
        so concurrent growths never shrink it."""
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
            seg.grow_to(max(end, 2 * capacity))
        dst = np.frombuffer(seg.mm, np.uint8, seg.capacity)
        _engine.gather(self.pool, srcs, np.array(offsets, np.int64), dst)
        del dst  # the mapping must have no views when it is remapped
        return seg.capacity, meta, sum(a.nbytes for a in srcs)

    def add_part(self, split: tuple, key: int, rid: int, capacity: int, outputs: list) -> None:
        bid, index, workers = split
        sizes = [_nbytes(o) for o in outputs]
        self.local.setdefault(bid, {})[index] = (key, rid, capacity, outputs)
        for w in sorted(set(workers)):
            if w in self.peers:
                self.peers[w].send(("sizes", bid, index, len(workers), sizes))
        self.add_sizes(bid, index, len(workers), sizes)

    def add_sizes(self, bid: int, index: int, parts: int, sizes: list[int]) -> None:
        if bid in self.dropped:
            return
        known = self.sizes.setdefault(bid, {})
        known[index] = sizes
        if len(known) == parts and len(self.local.get(bid, ())) > 0:
            self._write_parts(bid)

    def _write_parts(self, bid: int) -> None:
        """Every part's size is known: this worker's parts go where the layout puts them (each
        output's parts back to back, in order), and the pipeline hears that they are written."""
        known = self.sizes.pop(bid)
        order = [known[i] for i in range(len(known))]
        starts, _ = output_starts([sum(col) for col in zip(*order)])
        local = self.local.pop(bid)
        for index in range(len(order)):
            if index in local:
                key, rid, capacity, outputs = local[index]
                capacity, meta, nbytes = self.write(rid, capacity, outputs, starts)
                self.conn.send(("ok", key, capacity, meta, nbytes))
            starts = [s + n for s, n in zip(starts, order[index])]

    def drop(self, key: int, bid: int) -> None:
        """A part of batch ``bid`` that cannot complete (another part failed): forgotten unwritten."""
        self.dropped.append(bid)  # sizes that peers send for it later are ignored
        self.local.pop(bid, None)
        self.sizes.pop(bid, None)
        self.conn.send(("dropped", key))


def worker_main(index: int, conn: Any, peers: dict, sources_blob: Any, pickler: Any, parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the pipeline's to handle
    _die_with_parent()
    from .. import _engine
    from ..operators.external_source import _SourceCaller
    from ..types import SampleInfo
    sources = load_sources(sources_blob, pickler)
    callers: dict[str, _SourceCaller] = {}
    writer = _Writer(_engine.ThreadPool(1), conn, peers)
    later: collections.deque = collections.deque()  # the pipeline's messages read between samples
    waitables = [conn] + list(peers.values())

    def receive(ready: list) -> None:
        """Peers' sizes are handled at once (they may complete a waiting part); the pipeline's
        messages are queued in order."""
        for c in ready:
            while c.poll():
                try:
                    msg = c.recv()
                except (EOFError, OSError):
                    if c is conn:
                        raise
                    waitables.remove(c)  # a peer that ended: the pipeline handles its death
                    break
                if msg[0] == "sizes":
                    writer.add_sizes(*msg[1:])
                elif msg[0] == "region":  # its descriptor follows at once on the socket
                    writer.regions[msg[1]] = Segment(recv_handle(conn), msg[2])
                else:
                    later.append(msg)

    while True:
        if not later:
            try:
                ready = multiprocessing.connection.wait(waitables, 1.0)
                if not ready:
                    if os.getppid() != parent_pid:
                        return
                    continue
                receive(ready)
            except (EOFError, OSError):
                return
            continue
        msg = later.popleft()
        if msg[0] == "stop":
            return
        if msg[0] == "drop":
            writer.drop(msg[1], msg[2])
            continue
        _, name, key, payload, rid, capacity, split = msg
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
                    receive([c for c in waitables if c.poll()])  # peers' sizes complete earlier parts
                sample = None
                outputs = [_output_arrays([s[o] for s in per_sample], label) for o in range(caller.k)]
            if split is None:
                starts, _ = output_starts([_nbytes(o) for o in outputs])
                capacity, meta, nbytes = writer.write(rid, capacity, outputs, starts)
                conn.send(("ok", key, capacity, meta, nbytes))
            else:
                writer.add_part(split, key, rid, capacity, outputs)
        except StopIteration:
            conn.send(("stop", key))
        except Exception as exc:  # noqa: BLE001 - reported at the pipeline's run()
            tb = "".join(traceback.format_exception(exc))
            try:
                blob = pickle.dumps(exc)
                pickle.loads(blob)
            except Exception:  # noqa: BLE001 - an exception that does not travel: its text does
                blob = None
            conn.send(("error", key, blob, tb, sample, f"{type(exc).__name__}: {exc}"))
