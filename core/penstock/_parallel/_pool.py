"""The pipeline's side of the parallel external source: worker processes, task scheduling, and
batches copied once from the workers' shared memory into the pipeline's packed buffers."""
from __future__ import annotations

import collections
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import pickle
import sys
import time
import weakref
from multiprocessing.reduction import recv_handle
from typing import Any, Sequence

import numpy as np

from ._shm import Segment
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


def _stop_workers(procs: list, conns: list, segments: dict) -> None:
    """Ends every worker (asked first, then terminated) and unmaps the slots; idempotent."""
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
    for seg in segments.values():
        try:
            seg.close()
        except BufferError:  # a view is still alive somewhere: the mapping goes with it
            pass
    procs.clear()
    conns.clear()
    segments.clear()


class _Result:
    __slots__ = ("kind", "worker", "slot", "samples", "meta", "error", "traceback", "sample", "text")


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
        self._procs: list = []
        self._conns: list = []
        self._segments: dict[tuple[int, int], Segment] = {}
        self._slot_samples: dict[tuple[int, int], int] = {}
        self._finalizer = weakref.finalize(self, _stop_workers, self._procs, self._conns, self._segments)
        for w in range(num_workers):
            parent_end, child_end = ctx.Pipe(duplex=True)
            p = ctx.Process(target=worker_main, args=(w, child_end, blob, pickler_arg, os.getpid()),
                            name=f"penstock-es-worker-{w}", daemon=True)
            p.start()
            child_end.close()
            self._procs.append(p)
            self._conns.append(parent_end)
        self._outstanding = [0] * num_workers
        self._results: dict[int, _Result] = {}
        self._discard: set[int] = set()
        self._next_key = 0
        self.copy_seconds = 0.0
        self.copied_bytes = 0
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
        return self._finalizer.alive

    def close(self) -> None:
        self._finalizer()

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def source(self, name: str) -> "ParallelSource":
        return self.sources[name]

    # -- tasks
    def _check_alive(self) -> None:
        if not self.alive:
            raise RuntimeError("the external_source worker processes have been shut down (a worker died "
                               "or the pipeline was closed); build a new pipeline")

    def submit(self, name: str, payload: Any, worker: int | None = None) -> int:
        self._check_alive()
        if worker is None:
            worker = int(np.argmin(self._outstanding))
        key = self._next_key
        self._next_key += 1
        self._outstanding[worker] += 1
        self._send(worker, ("task", name, key, payload))
        return key

    def _send(self, worker: int, msg: tuple) -> None:
        self._check_alive()
        try:
            self._conns[worker].send(msg)
        except (OSError, ValueError) as exc:
            raise self._dead(worker) from exc

    def _dead(self, worker: int) -> RuntimeError:
        p = self._procs[worker]
        p.join(0.1)
        code = p.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        err = RuntimeError(f"external_source worker process {worker} (pid {p.pid}) {how}; the parallel "
                           "external_source cannot continue")
        self.close()
        return err

    def discard(self, key: int) -> None:
        """A task whose result is no longer wanted: its slot goes back as soon as it arrives."""
        res = self._results.pop(key, None)
        if res is None:
            self._discard.add(key)
        elif res.kind == "ok":
            self.release(res)

    def release(self, res: _Result) -> None:
        if self.alive:  # after a shutdown the slots are gone anyway
            self._send(res.worker, ("release", res.slot))

    def wait(self, key: int) -> _Result:
        while key not in self._results:
            self._check_alive()
            self._receive()
        return self._results.pop(key)

    def _receive(self) -> None:
        conns = list(self._conns)
        sentinels = {p.sentinel: w for w, p in enumerate(self._procs)}
        ready = multiprocessing.connection.wait(conns + list(sentinels), _POLL_S)
        for obj in ready:
            if obj in sentinels:
                w = sentinels[obj]
                if not self._conns[w].poll():  # died with nothing left to read
                    raise self._dead(w)
                continue
            w = conns.index(obj)
            try:
                msg = obj.recv()
            except (EOFError, OSError) as exc:
                raise self._dead(w) from exc
            self._handle(w, msg)

    def _handle(self, w: int, msg: tuple) -> None:
        res = _Result()
        res.kind, key, res.worker = msg[0], msg[1], w
        self._outstanding[w] -= 1
        if res.kind == "ok":
            _, _, res.slot, capacity, new, res.samples, res.meta = msg
            seg_key = (w, res.slot)
            if new:
                self._segments[seg_key] = Segment(recv_handle(self._conns[w]), capacity)
            elif capacity > self._segments[seg_key].capacity:
                self._segments[seg_key].map(capacity)  # the worker grew it
            self._slot_samples[seg_key] = max(1, res.samples)
        elif res.kind == "error":
            _, _, blob, res.traceback, res.sample, res.text = msg
            try:
                res.error = pickle.loads(blob) if blob is not None else RuntimeError(res.text)
            except Exception:  # noqa: BLE001 - its class does not exist in this process
                res.error = RuntimeError(res.text)
        if key in self._discard:
            self._discard.discard(key)
            if res.kind == "ok":
                self.release(res)
            return
        self._results[key] = res

    # -- copying out
    def copy_out(self, results: Sequence[_Result], pool: Any, label: str) -> list:
        """The outputs of a batch split over ``results`` (in sample order), each packed into one
        buffer by one native copy; the slots go back to their workers."""
        from .. import _engine
        from ..operators._batch import empty_batch
        start = time.perf_counter()
        batches = []
        try:
            for o in range(len(results[0].meta)):
                parts = [(r, r.meta[o]) for r in results]
                dtypes = {np.dtype(m[0]) for _, m in parts}
                ndims = {m[1].shape[1] for _, m in parts if len(m[1])}
                if len(dtypes) > 1 or len(ndims) > 1:
                    raise RuntimeError(f"{label}: the workers gave samples of different types or numbers of "
                                       f"dimensions for one batch ({sorted(map(str, dtypes))}, ndim {sorted(ndims)}); "
                                       "all samples of a batch must match")
                dtype = dtypes.pop()
                ndim = ndims.pop() if ndims else parts[0][1][1].shape[1]
                shapes = np.concatenate([m[1].reshape(-1, ndim) for _, m in parts]).astype(np.int64, copy=False)
                out = empty_batch(shapes, dtype)
                srcs, offsets, first = [], [], 0
                for r, (_, s, pos) in parts:
                    n = int(s.prod(axis=1).sum()) * dtype.itemsize if s.shape[1] else len(s) * dtype.itemsize
                    seg = self._segments[(r.worker, r.slot)]
                    srcs.append(np.frombuffer(seg.mm, np.uint8, n, pos))
                    offsets.append(int(out._offsets[first]) * dtype.itemsize if len(s) else 0)
                    first += len(s)
                _engine.gather(pool, srcs, np.array(offsets, np.int64), out._buf.view(np.uint8))
                del srcs
                self.copied_bytes += out._buf.nbytes
                batches.append(out)
        finally:
            for r in results:
                self.release(r)
        self.copy_seconds += time.perf_counter() - start
        self.copied_samples += len(batches[0]) if batches else 0
        self.batches += 1
        return batches

    def shm_statistics(self) -> dict:
        keys = sorted(self._segments)
        return {"capacities": [self._segments[k].capacity for k in keys],
                "per_sample_capacities": [self._segments[k].capacity // self._slot_samples.get(k, 1)
                                          for k in keys]}


class ParallelSource:
    """One parallel external source: keeps ``prefetch_queue_depth`` batches in flight ahead of the
    one the pipeline asks for and assembles the workers' results."""

    def __init__(self, pool: WorkerPool, spec: dict, dedicated: int | None):
        self.pool = pool
        self.spec = spec
        self.label = spec["label"]
        self.depth = spec["depth"]
        self.dedicated = dedicated
        self.epoch: int | None = None
        self.next_iteration = 0
        self.in_flight: dict[int, list[int]] = {}           # callables: iteration -> task keys
        self.fifo: collections.deque[int] = collections.deque()  # iterators: next() requests in order

    def _chunks(self) -> list[range]:
        bs = self.spec["batch_size"]
        step = -(-bs // self.pool.num_workers)
        return [range(b, min(bs, b + step)) for b in range(0, bs, step)]

    def _submit(self, epoch: int, iteration: int) -> list[int]:
        name = self.spec["name"]
        if self.spec["batch"]:
            return [self.pool.submit(name, (epoch, iteration))]
        bs = self.spec["batch_size"]
        return [self.pool.submit(name, [(iteration * bs + j, j, iteration, epoch) for j in chunk])
                for chunk in self._chunks()]

    def fetch(self, epoch: int, iteration: int, pool: Any) -> list:
        if self.dedicated is not None:
            while len(self.fifo) < self.depth + 1:
                self.fifo.append(self.pool.submit(self.spec["name"], (epoch, iteration), self.dedicated))
            keys = [self.fifo.popleft()]
        else:
            if epoch != self.epoch or iteration < self.next_iteration - len(self.in_flight):
                self._cancel()  # a new epoch: what was computed ahead for the old one is dropped
                self.epoch, self.next_iteration = epoch, iteration
            while self.next_iteration <= iteration + self.depth:
                self.in_flight[self.next_iteration] = self._submit(epoch, self.next_iteration)
                self.next_iteration += 1
            keys = self.in_flight.pop(iteration)
        results = [self.pool.wait(k) for k in keys]
        ok = [r for r in results if r.kind == "ok"]
        bad = next((r for r in results if r.kind != "ok"), None)
        if bad is not None:
            for r in ok:
                self.pool.release(r)
            if bad.kind == "stop":
                raise StopIteration
            from ..operators.external_source import wrap_source_error
            note = "Traceback in the worker process:\n" + bad.traceback.rstrip()
            raise wrap_source_error(bad.error, self.label, epoch, iteration, bad.sample, note) from bad.error
        return self.pool.copy_out(ok, pool, self.label)

    def _cancel(self) -> None:
        for keys in self.in_flight.values():
            for k in keys:
                self.pool.discard(k)
        self.in_flight.clear()
