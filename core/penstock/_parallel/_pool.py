"""The pipeline's side of the parallel external source: worker processes, task scheduling, and
shared-memory regions that the workers fill at the batch's final offsets and that the pipeline's
batches then view without a copy (one copy in all: the worker's, from the source's arrays)."""
from __future__ import annotations

import collections
import functools
import multiprocessing
import sys
import time
import weakref
from typing import Any, Sequence

import numpy as np

from .._sources import source_timeout_error, wrap_source_error
from ._cuda_context import cuda_context_exists
from ._hub import Batch, Hub, Region, control_pipe, stop_workers
from ._shm import lease
from ._worker import worker_main


REPORT_TIMEOUT_S = 5.0  # how long a worker's lifeline thread has to answer (it needs the GIL)


def _position(report: dict) -> str:
    sample = "" if report["sample"] is None else f", sample {report['sample']}"
    return f"iteration {report['iteration']} of epoch {report['epoch']}{sample}"


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
        controls: list = []
        stderrs: list = []
        try:
            for w in range(num_workers):
                parent_end, child_end = ctx.Pipe(duplex=True)
                control, worker_control = control_pipe(ctx)
                controls.append(control)
                # the worker's standard error comes through a pipe: passed on to ours, its end kept
                # for the error that reports the worker's death (see Hub.stderr_tail)
                stderr, worker_stderr = ctx.Pipe(duplex=False)
                stderrs.append(stderr)
                p = ctx.Process(target=worker_main,
                                args=(w, child_end, worker_control, worker_stderr, blob, pickler_arg),
                                name=f"penstock-es-worker-{w}", daemon=True)
                p.start()
                child_end.close()
                worker_control.close()
                worker_stderr.close()
                procs.append(p)
                conns.append(parent_end)
        except BaseException:
            stop_workers(procs, conns, controls, stderrs)
            raise
        self.hub = Hub(procs, conns, controls, stderrs)
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
    def assemble(self, batch: Batch, source: "ParallelSource") -> list:
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

    def stacks(self) -> str:
        """What each worker runs and its threads' stacks (Pipeline.dump_stacks)."""
        parts = []
        for w, p in enumerate(list(self.hub.procs)):
            report = self.hub.report(w, REPORT_TIMEOUT_S)
            title = f"external_source worker process {w} (pid {p.pid})"
            if report is None:
                parts.append(f"{title}: did not answer within {REPORT_TIMEOUT_S:g} s (it is gone, or its "
                             "source holds the GIL in native code)\n")
                continue
            doing = "between tasks" if report["source"] is None else \
                f"running {self.sources[report['source']].label}, {_position(report)}"
            parts.append(f"{title}, {doing}:\n{report['stacks']}")
        return "\n".join(parts)

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
        self.regions: collections.deque[Region] = collections.deque()  # free ones
        self.last_bytes = 0  # the largest region a batch of this source needed
        self.epoch: int | None = None
        self.next_iteration = 0
        self.in_flight: dict[int, Batch] = {}                     # callables: iteration -> batch
        self.fifo: collections.deque[Batch] = collections.deque()  # iterators: next() requests in order

    def capacity_hint(self) -> int:
        """The size of a new region: what batches needed so far, else bytes_per_sample_hint."""
        return max(self.last_bytes, (self.spec["bytes_per_sample_hint"] or 0) * self.spec["batch_size"])

    def _chunks(self) -> list[range]:
        bs = self.spec["batch_size"]
        step = -(-bs // self.pool.num_workers)
        return [range(b, min(bs, b + step)) for b in range(0, bs, step)]

    def _submit(self, payloads: list, worker: int | None = None) -> Batch:
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
        if not self.pool.hub.wait(batch, self.spec["timeout"]):
            raise self._timed_out(batch, epoch, iteration)
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

    def _timed_out(self, batch: Batch, epoch: int, iteration: int) -> RuntimeError:
        """The error of a batch not done within source_timeout: it names the source, iteration and
        sample a worker holding part of it is running (another parallel source of the pipeline,
        perhaps) with that worker's stacks. The workers are ended: they may never return."""
        hub = self.pool.hub
        # a part still computing (not one computed and waiting for its place)
        unfinished = [i for i, r in enumerate(batch.results) if r is None]
        part = next((i for i in unfinished if batch.sizes[i] is None), unfinished[0])
        w = batch.workers[part]
        report = hub.report(w, REPORT_TIMEOUT_S)
        where = f"in external_source worker process {w}, pid {hub.procs[w].pid}"
        if report is not None and report["source"] is not None:
            label = self.pool.sources[report["source"]].label
            err = source_timeout_error(label, self.spec["timeout"], report["epoch"], report["iteration"],
                                       report["sample"], where, report["stacks"])
        else:
            stack = (f"(the worker did not answer within {REPORT_TIMEOUT_S:g} s: its source may hold the GIL "
                     "in native code)" if report is None else report["stacks"])
            err = source_timeout_error(self.label, self.spec["timeout"], epoch, iteration, None, where, stack)
        hub.close(f"a source did not return within source_timeout: {err.args[0]}")
        return err

    def _cancel(self) -> None:
        for batch in self.in_flight.values():
            self.pool.hub.discard(batch)
        self.in_flight.clear()
