"""The pipeline's side of the parallel external source: worker processes, task scheduling, and
shared-memory regions that the workers fill at the batch's final offsets and that the pipeline's
batches then view without a copy (one copy in all: the worker's, from the source's arrays)."""
from __future__ import annotations

import collections
import ctypes
import functools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import sys
import threading
import time
import weakref
from multiprocessing.reduction import send_handle
from typing import Any, Sequence

import numpy as np

from .._sources import wrap_source_error
from ._shm import Segment, lease, new_memfd, output_starts
from ._worker import worker_main

_POLL_S = 0.5  # how often a wait for results checks that the workers are alive


def _driver_has_context() -> bool:
    """Asks the CUDA driver, only when this process already loaded it (nothing is initialized
    here): is a primary context active on some device, or a context current on this thread?"""
    try:
        with open("/proc/self/maps") as f:
            if "libcuda.so" not in f.read():
                return False
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:  # CUDA_ERROR_NOT_INITIALIZED: no context
        return False
    for ordinal in range(count.value):
        dev, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
        if (lib.cuDeviceGet(ctypes.byref(dev), ordinal) == 0 and
                lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) == 0 and
                active.value):
            return True
    ctx = ctypes.c_void_p(0)
    return lib.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and bool(ctx.value)


def cuda_context_exists() -> bool:
    """Whether this process already holds a CUDA context, judged without creating one and
    without importing a framework: frameworks already imported are asked, then the driver."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return True
    except Exception:  # noqa: BLE001 - a torch without CUDA support
        pass
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None and cupy.get_default_memory_pool().total_bytes() > 0:
            return True
    except Exception:  # noqa: BLE001
        pass
    return _driver_has_context()


def _pickler_parts(pickler: Any) -> tuple[Any, dict, dict]:
    """py_callback_pickler as (module or object, dumps kwargs, loads kwargs)."""
    if pickler is None:
        from .. import pickling
        pickler = pickling
    if isinstance(pickler, tuple):
        if not 1 <= len(pickler) <= 3:
            raise ValueError("py_callback_pickler as a tuple is (pickler, dumps_kwargs, loads_kwargs)")
        module, dumps_kw, loads_kw = (list(pickler) + [{}, {}])[:3]
    else:
        module, dumps_kw, loads_kw = pickler, {}, {}
    if not (hasattr(module, "dumps") and hasattr(module, "loads")):
        raise TypeError("py_callback_pickler must have dumps and loads (a module such as pickle, dill or "
                        f"cloudpickle, or an object), got {module!r}")
    return module, dict(dumps_kw or {}), dict(loads_kw or {})


def _stop_workers(procs: list, conns: list) -> None:
    """Ends every worker (asked first, then terminated); idempotent."""
    for c in conns:
        try:
            c.send(("stop",))
        except Exception:  # noqa: BLE001 - a dead worker
            pass
    deadline = time.monotonic() + 2.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    for c in conns:
        c.close()
    procs.clear()
    conns.clear()


class _Region(Segment):
    """A shared-memory region the pipeline owns; one batch of one source at a time is written into
    it. Free regions wait in their source's ``regions`` deque (appends and pops are atomic: the
    lease's finalizer puts a region back from whichever thread frees its batch's last view)."""

    def __init__(self, rid: int, capacity: int):
        super().__init__(*new_memfd(capacity))
        self.rid = rid
        self.sent: set[int] = set()  # workers that hold its descriptor
        self.samples = 1             # samples of the batch it last carried


class _Result:
    __slots__ = ("kind", "meta", "error", "traceback", "sample", "text")


class _Batch:
    """One batch in flight: its parts (one task each, on possibly different workers), the region
    they are written into, and the free list of its source that the region returns to."""
    __slots__ = ("free", "region", "keys", "workers", "sizes", "results", "left", "placed", "failed",
                 "discarded")

    def __init__(self, free: collections.deque, region: _Region, parts: int):
        self.free = free
        self.region = region
        self.keys: list[int] = []
        self.workers: list[int] = []
        self.sizes: list[list[int] | None] = [None] * parts
        self.results: list[_Result | None] = [None] * parts
        self.left = parts
        self.placed = self.failed = self.discarded = False


class _Hub:
    """The workers, their batches in flight, and a receiver thread that handles every message from
    the workers as it arrives: it places the parts of a batch as soon as their sizes are known, so
    workers write them while the pipeline is busy elsewhere. Methods whose names end in ``_locked``
    expect ``cond`` held. The hub holds no reference to the WorkerPool, whose finalizer closes it
    (a pipeline garbage-collected mid-epoch still ends its workers)."""

    def __init__(self, procs: list, conns: list):
        self.procs = procs
        self.conns = conns
        self.regions: list[_Region] = []
        self.cond = threading.Condition()
        self.parts: dict[int, tuple[_Batch, int]] = {}  # task key -> its batch and part
        self.outstanding = [0] * len(procs)
        self.next_key = 0
        self.failure: RuntimeError | None = None  # a worker's death, raised once by the next wait
        self.closed = False
        self.copied_bytes = 0
        self._wake_r, self._wake_w = os.pipe()
        self.thread = threading.Thread(target=self._run, name="penstock-es-receiver", daemon=True)
        self.thread.start()

    # -- lifetime
    def close(self) -> None:
        """Stops the receiver thread, which ends the workers and closes the regions; idempotent."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
            if self._wake_w >= 0:
                os.write(self._wake_w, b"x")
        if threading.current_thread() is self.thread:
            return  # the loop ends after this call returns
        self.thread.join()
        with self.cond:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        sentinels = {p.sentinel: w for w, p in enumerate(self.procs)}
        conns = list(self.conns)
        try:
            while not self.closed:
                ready = multiprocessing.connection.wait(conns + list(sentinels) + [self._wake_r], _POLL_S)
                with self.cond:
                    if self.closed:
                        break
                    for obj in ready:
                        if self.closed:
                            break
                        if obj in sentinels:
                            w = sentinels[obj]
                            if not conns[w].poll():  # died with nothing left to read
                                self._fail_locked(w)
                                break
                        elif obj is not self._wake_r:
                            w = conns.index(obj)
                            try:
                                while not self.closed and obj.poll():
                                    self._handle_locked(w, obj.recv())
                            except (EOFError, OSError):
                                self._fail_locked(w)
                                break
                    self.cond.notify_all()
        except BaseException as exc:  # a bug here must fail run(), never leave it waiting
            with self.cond:
                self.failure = RuntimeError(f"external_source: the thread receiving the workers' batches "
                                            f"failed: {type(exc).__name__}: {exc}")
                self.closed = True
                self.cond.notify_all()
            raise
        finally:
            _stop_workers(self.procs, self.conns)
            with self.cond:  # a batch still viewing one keeps its mapping until it is freed
                for r in self.regions:
                    r.close()
                self.regions.clear()

    def _fail_locked(self, worker: int) -> None:
        p = self.procs[worker]
        p.join(0.1)
        code = p.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        self.failure = RuntimeError(f"external_source worker process {worker} (pid {p.pid}) {how}; the "
                                    "parallel external_source cannot continue")
        self.closed = True
        self.cond.notify_all()

    def check_locked(self) -> None:
        if self.failure is not None:
            err, self.failure = self.failure, None
            raise err
        if self.closed:
            raise RuntimeError("the external_source worker processes have been shut down (a worker died "
                               "or the pipeline was closed); build a new pipeline")

    def _send_locked(self, worker: int, msg: tuple, fd: int | None = None) -> None:
        """``msg`` to a worker, then (a new region) the descriptor it announces."""
        try:
            self.conns[worker].send(msg)
            if fd is not None:
                send_handle(self.conns[worker], fd, self.procs[worker].pid)
        except (OSError, ValueError):
            self._fail_locked(worker)
            os.write(self._wake_w, b"x")
            if threading.current_thread() is not self.thread:
                self.check_locked()

    # -- the pipeline's side (its scheduling thread)
    def submit(self, free: collections.deque, hint: int, name: str, payloads: Sequence[Any],
               worker: int | None) -> _Batch:
        """One batch as ``len(payloads)`` tasks; a single task writes its batch straight away, parts
        of a batch wait for their places (see _place_locked)."""
        with self.cond:
            self.check_locked()
            if free:
                region = free.popleft()
            else:
                region = _Region(len(self.regions), hint)
                self.regions.append(region)
            batch = _Batch(free, region, len(payloads))
            direct = len(payloads) == 1
            for i, payload in enumerate(payloads):
                w = int(np.argmin(self.outstanding)) if worker is None else worker
                key = self.next_key
                self.next_key += 1
                self.outstanding[w] += 1
                self.parts[key] = (batch, i)
                batch.keys.append(key)
                batch.workers.append(w)
                if w not in region.sent:
                    self._send_locked(w, ("region", region.rid, region.capacity), region.fd)
                    region.sent.add(w)
                self._send_locked(w, ("task", name, key, payload, region.rid, region.capacity, direct))
            return batch

    def wait(self, batch: _Batch) -> None:
        with self.cond:
            while batch.left:
                self.check_locked()
                self.cond.wait(_POLL_S)

    def discard(self, batch: _Batch) -> None:
        """A batch no longer wanted: its region goes back once no worker will write to it."""
        with self.cond:
            batch.discarded = True
            if batch.left == 0:
                batch.free.append(batch.region)
            elif not batch.placed and not self.closed:
                for i, s in enumerate(batch.sizes):
                    if s is not None and batch.results[i] is None:
                        self._drop_locked(batch, i)

    # -- the receiver thread's side
    def _handle_locked(self, w: int, msg: tuple) -> None:
        kind, key = msg[0], msg[1]
        batch, i = self.parts[key]
        if kind != "ok" or len(batch.keys) == 1:  # the worker is done computing this part
            self.outstanding[w] -= 1
        if kind == "sizes":
            batch.sizes[i] = msg[2]
            if batch.failed or batch.discarded:
                self._drop_locked(batch, i)
            elif all(s is not None for s in batch.sizes):
                self._place_locked(batch)
            return
        res = _Result()
        res.kind = kind
        if kind == "ok":
            _, _, capacity, res.meta, nbytes = msg
            batch.region.ensure(capacity)  # a worker grew it; no batch views it while in flight
            self.copied_bytes += nbytes
        elif kind == "error":
            _, _, blob, res.traceback, res.sample, res.text = msg
            try:
                res.error = pickle.loads(blob) if blob is not None else RuntimeError(res.text)
            except Exception:  # noqa: BLE001 - its class does not exist in this process
                res.error = RuntimeError(res.text)
        self._finish_locked(batch, i, res)
        if kind in ("stop", "error") and not batch.placed:
            batch.failed = True  # parts waiting for a place are not written
            for j, s in enumerate(batch.sizes):
                if s is not None and batch.results[j] is None:
                    self._drop_locked(batch, j)

    def _finish_locked(self, batch: _Batch, i: int, res: _Result) -> None:
        batch.results[i] = res
        batch.left -= 1
        del self.parts[batch.keys[i]]
        if batch.left == 0 and batch.discarded:
            batch.free.append(batch.region)

    def _drop_locked(self, batch: _Batch, i: int) -> None:
        res = _Result()
        res.kind = "dropped"
        self._finish_locked(batch, i, res)
        self._send_locked(batch.workers[i], ("drop", batch.keys[i]))

    def _place_locked(self, batch: _Batch) -> None:
        """Every part's size is known: each output's parts go back to back at their final offsets,
        and the workers write them there."""
        totals = [sum(col) for col in zip(*batch.sizes)]
        starts, end = output_starts(totals)
        batch.region.grow(end)  # the region is this batch's alone while in flight
        batch.placed = True
        for i, sizes in enumerate(batch.sizes):
            self._send_locked(batch.workers[i], ("place", batch.keys[i], batch.region.capacity, list(starts)))
            starts = [s + n for s, n in zip(starts, sizes)]


class WorkerPool:
    """``py_num_workers`` processes shared by a pipeline's parallel external sources."""

    def __init__(self, specs: Sequence[dict], num_workers: int, start_method: str, pickler: Any):
        if not isinstance(num_workers, int) or num_workers < 1:
            raise RuntimeError(f"a parallel external_source needs py_num_workers >= 1, got {num_workers!r}")
        if start_method == "fork" and cuda_context_exists():
            raise RuntimeError(
                "cannot start external_source worker processes with py_start_method='fork': this process "
                "already has a CUDA context, which a forked process cannot use. Call start_py_workers() on "
                "every pipeline before touching the GPU (before build(), and before a framework or CuPy "
                "initializes CUDA), or use py_start_method='spawn'")
        self.num_workers = num_workers
        sources = {s["name"]: s for s in specs}
        if start_method == "spawn":
            module, dumps_kw, loads_kw = _pickler_parts(pickler)
            try:
                blob: Any = module.dumps(sources, **dumps_kw)
            except Exception as exc:
                raise RuntimeError(f"the sources of the parallel external_source(s) could not be pickled for "
                                   f"spawned workers: {exc}; use py_start_method='fork', make the source "
                                   "importable, or pass a py_callback_pickler (e.g. dill or cloudpickle)") from exc
            name = getattr(module, "__name__", None)
            pickler_arg = (name if name in sys.modules and sys.modules[name] is module else module,
                           dumps_kw, loads_kw)
        else:
            blob, pickler_arg = sources, None
        ctx = multiprocessing.get_context(start_method)
        procs: list = []
        conns: list = []
        try:
            for w in range(num_workers):
                parent_end, child_end = ctx.Pipe(duplex=True)
                p = ctx.Process(target=worker_main, args=(w, child_end, blob, pickler_arg, os.getpid()),
                                name=f"penstock-es-worker-{w}", daemon=True)
                p.start()
                child_end.close()
                procs.append(p)
                conns.append(parent_end)
        except BaseException:
            _stop_workers(procs, conns)
            raise
        self.hub = _Hub(procs, conns)
        self._finalizer = weakref.finalize(self, self.hub.close)
        # transport accounting: the time this process spends turning filled regions into batches
        # (the bytes copied, all by the workers, are ``copied_bytes``)
        self.assemble_seconds = 0.0
        self.copied_samples = 0
        self.batches = 0
        iterators = 0
        self.sources: dict[str, ParallelSource] = {}
        for spec in specs:
            dedicated = None
            if spec["kind"] == "iterator":  # its state lives in one worker
                dedicated, iterators = iterators % num_workers, iterators + 1
            self.sources[spec["name"]] = ParallelSource(self, spec, dedicated)

    # -- lifetime
    @property
    def alive(self) -> bool:
        return not self.hub.closed

    def close(self) -> None:
        self._finalizer()

    def pids(self) -> list[int]:
        return [p.pid for p in self.hub.procs]

    def source(self, name: str) -> "ParallelSource":
        return self.sources[name]

    @property
    def copied_bytes(self) -> int:
        """Bytes the workers copied from the sources' arrays into the regions: the only copy."""
        return self.hub.copied_bytes

    # -- batches
    def assemble(self, batch: _Batch, source: "ParallelSource") -> list:
        """The outputs of a finished batch as TensorListCPUs viewing its region (no copy); the region
        is leased to them and returns to the source's pool once they are all freed."""
        from ..tensors import TensorListCPU
        start = time.perf_counter()
        region, parts = batch.region, batch.results
        outs = []
        try:
            for o in range(len(parts[0].meta)):
                metas = [r.meta[o] for r in parts]
                dtypes = {np.dtype(m[0]) for m in metas}
                ndims = {m[1].shape[1] for m in metas if len(m[1])}
                if len(dtypes) > 1 or len(ndims) > 1:
                    raise RuntimeError(f"{source.label}: the workers gave samples of different types or numbers of "
                                       f"dimensions for one batch ({sorted(map(str, dtypes))}, ndim {sorted(ndims)}); "
                                       "all samples of a batch must match")
                dtype = dtypes.pop()
                ndim = ndims.pop() if ndims else metas[0][1].shape[1]
                shapes = np.concatenate([m[1].reshape(-1, ndim) for m in metas]).astype(np.int64, copy=False)
                volumes = shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)
                outs.append((dtype, shapes, metas[0][2], int(volumes.sum()) * dtype.itemsize))
        except BaseException:
            batch.free.append(region)
            raise
        samples = len(outs[0][1]) if outs else 0
        region.samples = max(1, samples)
        needed = max((begin + nbytes for _, _, begin, nbytes in outs), default=0)
        source.last_bytes = max(source.last_bytes, needed)
        mem = lease(region, region.capacity, functools.partial(batch.free.append, region))
        batches = [TensorListCPU._from_packed(mem[begin:begin + nbytes].view(dtype), shapes)
                   for dtype, shapes, begin, nbytes in outs]
        del mem
        self.assemble_seconds += time.perf_counter() - start
        self.copied_samples += samples
        self.batches += 1
        return batches

    def shm_statistics(self) -> dict:
        regions = list(self.hub.regions)
        return {"capacities": [r.capacity for r in regions],
                "per_sample_capacities": [r.capacity // r.samples for r in regions]}


class ParallelSource:
    """One parallel external source: keeps ``prefetch_queue_depth`` batches in flight ahead of the
    one the pipeline asks for and assembles the workers' results."""

    def __init__(self, pool: WorkerPool, spec: dict, dedicated: int | None):
        self.pool = pool
        self.spec = spec
        self.label = spec["label"]
        self.depth = spec["depth"]
        self.dedicated = dedicated
        self.regions: collections.deque[_Region] = collections.deque()  # free ones
        self.last_bytes = 0  # the largest region a batch of this source needed
        self.epoch: int | None = None
        self.next_iteration = 0
        self.in_flight: dict[int, _Batch] = {}                     # callables: iteration -> batch
        self.fifo: collections.deque[_Batch] = collections.deque()  # iterators: next() requests in order

    def capacity_hint(self) -> int:
        """The size of a new region: what batches needed so far, else bytes_per_sample_hint."""
        return max(self.last_bytes, (self.spec["bytes_per_sample_hint"] or 0) * self.spec["batch_size"])

    def _chunks(self) -> list[range]:
        bs = self.spec["batch_size"]
        step = -(-bs // self.pool.num_workers)
        return [range(b, min(bs, b + step)) for b in range(0, bs, step)]

    def _submit(self, payloads: list, worker: int | None = None) -> _Batch:
        return self.pool.hub.submit(self.regions, self.capacity_hint(), self.spec["name"], payloads, worker)

    def _payloads(self, epoch: int, iteration: int) -> list:
        if self.spec["batch"]:
            return [(epoch, iteration)]
        bs = self.spec["batch_size"]
        return [[(iteration * bs + j, j, iteration, epoch) for j in chunk] for chunk in self._chunks()]

    def fetch(self, epoch: int, iteration: int) -> list:
        if self.dedicated is not None:
            while len(self.fifo) < self.depth + 1:
                self.fifo.append(self._submit([(epoch, iteration)], self.dedicated))
            batch = self.fifo.popleft()
        else:
            if epoch != self.epoch or iteration < self.next_iteration - len(self.in_flight):
                self._cancel()  # a new epoch: what was computed ahead for the old one is dropped
                self.epoch, self.next_iteration = epoch, iteration
            while self.next_iteration <= iteration + self.depth:
                self.in_flight[self.next_iteration] = self._submit(self._payloads(epoch, self.next_iteration))
                self.next_iteration += 1
            batch = self.in_flight.pop(iteration)
        self.pool.hub.wait(batch)
        bad = next((r for r in batch.results if r.kind in ("stop", "error")), None)
        if bad is not None:
            batch.free.append(batch.region)
            if bad.kind == "stop":
                raise StopIteration
            note = "Traceback in the worker process:\n" + bad.traceback.rstrip()
            raise wrap_source_error(bad.error, self.label, epoch, iteration, bad.sample, note) from bad.error
        with self.pool.hub.cond:  # the regions are not closed meanwhile
            self.pool.hub.check_locked()
            return self.pool.assemble(batch, self)

    def _cancel(self) -> None:
        for batch in self.in_flight.values():
            self.pool.hub.discard(batch)
        self.in_flight.clear()
