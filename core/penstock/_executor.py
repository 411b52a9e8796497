"""Runs compiled graphs: iterations flow through stages (cpu -> mixed -> gpu) on worker threads.

The scheduling thread fetches source data (external sources, ``iter_setup``) and submits an
iteration; each stage's worker runs its operators (kernels release the GIL) and hands the
iteration on. Errors are captured per iteration and raised when that iteration is consumed.
"""
from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from typing import Any, Sequence

import numpy as np

from ._operator import Operator, SampleError, Workspace, sample_error_from_engine
from ._registry import ArgumentValueError


def _check_input_layout(op: Operator, inputs: list) -> None:
    """An input layout the operator does not take is an error (DALI's), not a guess."""
    allowed = op.schema.input_layouts
    layout = inputs[0]._layout if allowed and inputs else ""
    if layout and layout not in allowed:
        raise ArgumentValueError(f"{op.label}: input 0 has layout '{layout}', which the operator does not "
                                 f"take; allowed layouts: {', '.join(allowed)}")


class PipelineError(RuntimeError):
    """An operator failed while running an iteration."""


class Iteration:
    __slots__ = ("index", "epoch", "batch_size", "fed", "values", "results", "error", "done")

    def __init__(self, index: int, epoch: int, batch_size: int, fed: dict):
        self.index = index
        self.epoch = epoch
        self.batch_size = batch_size
        self.fed = fed
        self.values: dict = {}
        self.results: tuple | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class OpStats:
    __slots__ = ("runs", "seconds", "output_bytes", "real", "reserved", "max_real", "max_reserved")

    def __init__(self) -> None:
        self.runs = 0
        self.seconds = 0.0
        self.output_bytes = 0
        # per output, bytes of this iteration's samples (real) and of its buffer (reserved), and their peaks
        self.real: list[int] = []
        self.reserved: list[int] = []
        self.max_real: list[int] = []
        self.max_reserved: list[int] = []

    def record_outputs(self, outs: Sequence[Any]) -> None:
        self.real = [int(np.prod(out._shapes, axis=1).sum()) * out._buf.itemsize for out in outs]
        self.reserved = [int(out._buf.nbytes) for out in outs]
        self.output_bytes = sum(self.reserved)
        if len(self.max_real) != len(outs):
            self.max_real, self.max_reserved = [0] * len(outs), [0] * len(outs)
        self.max_real = [max(a, b) for a, b in zip(self.max_real, self.real)]
        self.max_reserved = [max(a, b) for a, b in zip(self.max_reserved, self.reserved)]


def _describe_failure(op: Operator, exc: BaseException, inputs: Sequence[Any]) -> str:
    where = f"Error in {op.device.upper()} operator `penstock.fn.{op.schema.fn_name}` (instance '{op.name}')"
    sample_err = exc if isinstance(exc, SampleError) else sample_error_from_engine(exc)
    if sample_err is not None:
        where += f", sample {sample_err.sample}"
        for tl in inputs:
            infos = getattr(tl, "_source_info", None)
            if infos and sample_err.sample < len(infos) and infos[sample_err.sample]:
                where += f" (source: '{infos[sample_err.sample]}')"
                break
        return f"{where}:\n{sample_err.args[0] if sample_err.args else sample_err}"
    return f"{where}:\n{type(exc).__name__}: {exc}"


class Executor:
    _live: "weakref.WeakSet[Executor]" = weakref.WeakSet()

    def __init__(self, stages: Sequence[Sequence[Operator]], output_refs: Sequence[tuple[int, int]],
                 pool: Any, exec_async: bool, exec_pipelined: bool):
        self.stages = [list(s) for s in stages if s]
        self.output_refs = list(output_refs)
        self.pool = pool
        self.stats: dict[str, OpStats] = {op.name: OpStats() for s in self.stages for op in s}
        # last stage/op position that reads each value, so buffers are dropped as soon as possible
        self._last_use: dict[tuple[int, int], int] = {}
        flat = [op for s in self.stages for op in s]
        for pos, op in enumerate(flat):
            for d in list(op.node.inputs) + list(op.node.arg_inputs.values()):
                self._last_use[(d.source.id, d.index)] = pos
        for ref in self.output_refs:
            self._last_use[ref] = len(flat)
        self._position = {id(op): pos for pos, op in enumerate(flat)}
        self._plans: dict[int, tuple] = {}
        self._threads: list[threading.Thread] = []
        self._queues: list[queue.Queue] = []
        self._closed = False
        self.exec_async = exec_async
        if exec_async:
            groups = self.stages if exec_pipelined else [[op for s in self.stages for op in s]]
            self._groups = groups
            self._queues = [queue.Queue() for _ in groups]
            for k in range(len(groups)):
                nxt = self._queues[k + 1] if k + 1 < len(groups) else None
                # the thread gets the group's index, not its ops: operators reference their graph
                # nodes and those the pipeline, which would keep a dropped pipeline alive
                t = threading.Thread(target=_stage_worker, args=(weakref.ref(self), k, self._queues[k], nxt),
                                     name=f"penstock-stage{k}", daemon=True)
                t.start()
                self._threads.append(t)
        Executor._live.add(self)

    # -- running
    def _plan(self, op: Operator) -> tuple:
        """Per operator, computed once: the value keys it reads and those it is the last to read."""
        plan = self._plans.get(id(op))
        if plan is None:
            node = op.node
            inputs = [(d.source.id, d.index) for d in node.inputs]
            arg_inputs = [(k, (d.source.id, d.index)) for k, d in node.arg_inputs.items()]
            pos = self._position[id(op)]
            reads = set(inputs) | {key for _, key in arg_inputs}
            drop = [key for key in reads if self._last_use.get(key, -1) <= pos]
            plan = self._plans[id(op)] = (inputs, arg_inputs, drop, self.stats[op.name])
        return plan

    def run_ops(self, ops: Sequence[Operator], it: Iteration) -> None:
        values = it.values
        for op in ops:
            in_keys, arg_keys, drop, stats = self._plan(op)
            inputs = [values[key] for key in in_keys]
            arg_inputs = {k: values[key] for k, key in arg_keys}
            ws = Workspace(inputs, arg_inputs, it.batch_size, it.index, it.epoch, self.pool,
                           it.fed.get(op.node.id), op)
            _check_input_layout(op, inputs)
            start = time.perf_counter()
            try:
                outs = op.run(ws)
            except BaseException as exc:  # noqa: BLE001 - reported at outputs()
                raise PipelineError(_describe_failure(op, exc, inputs)) from exc
            stats.seconds += time.perf_counter() - start
            stats.runs += 1
            node_id = op.node.id
            for i, out in enumerate(outs):
                if inputs:
                    src = out._source_info
                    if src is not inputs[0]._source_info and len(out) == len(inputs[0]) and not any(src):
                        out._source_info = inputs[0]._source_info
                values[(node_id, i)] = out
            stats.record_outputs(outs)
            for key in drop:
                values.pop(key, None)

    def finish(self, it: Iteration) -> None:
        it.results = tuple(it.values[ref] for ref in self.output_refs)
        it.values = {}

    def submit(self, it: Iteration) -> None:
        if self._closed:
            raise RuntimeError("the pipeline's executor has been shut down")
        if not self.exec_async or not self._queues:  # no queues: a graph without operators
            run_iteration_inline(self, it)
        else:
            self._queues[0].put(it)

    def wait(self, it: Iteration) -> tuple:
        while not it.done.wait(0.1):
            if self._closed:
                raise RuntimeError("the pipeline was shut down while an iteration was running")
            if not all(t.is_alive() for t in self._threads):
                raise RuntimeError("a pipeline worker thread died unexpectedly")
        if it.error is not None:
            raise it.error
        assert it.results is not None
        return it.results

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        for q in self._queues:
            q.put(None)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=10)
        self._threads = []

    def __del__(self) -> None:
        self.shutdown()


def run_iteration_inline(ex: Executor, it: Iteration) -> None:
    try:
        for ops in ex.stages:
            ex.run_ops(ops, it)
        ex.finish(it)
    except BaseException as exc:  # noqa: BLE001
        it.error = exc
        it.values = {}
    it.done.set()


def _stage_worker(ex_ref: "weakref.ref[Executor]", group: int, inbox: queue.Queue, outbox: queue.Queue | None) -> None:
    # Holds the executor only while working on an iteration, so a dropped pipeline is freed.
    while True:
        it = inbox.get()
        if it is None:
            if outbox is not None:
                outbox.put(None)
            return
        ex = ex_ref()
        if ex is None:
            return
        if it.error is None:
            try:
                ex.run_ops(ex._groups[group], it)
                if outbox is None:
                    ex.finish(it)
            except BaseException as exc:  # noqa: BLE001
                it.error = exc
                it.values = {}
        del ex
        if outbox is not None:
            outbox.put(it)
        else:
            it.done.set()


@atexit.register
def _shutdown_all() -> None:
    for ex in list(Executor._live):
        ex.shutdown()
