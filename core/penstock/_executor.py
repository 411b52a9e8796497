"""Runs compiled graphs: iterations flow through stages (cpu -> mixed -> gpu) on worker threads.

The scheduling thread fetches source data (external sources, ``iter_setup``) and submits an
iteration; each stage's worker runs its operators (kernels release the GIL) and hands the
iteration on. Errors are captured per iteration and raised when that iteration is consumed.

Mixed and GPU operators enqueue their work on the pipeline's CUDA stream and return at once; an
iteration's GPU outputs carry an event recorded after its last kernel, so consumers wait on the
GPU, not the host. A batch a mixed decoder is still filling in the background is completed by the
first GPU operator that reads it or, when it is a pipeline output, by the thread that waits for
the iteration, so no stage's worker blocks on it. With GPU stages, two gates bound memory: at
most ``cpu_size`` iterations finished on the CPU wait for the GPU stages, and at most
``gpu_size`` iterations of GPU outputs exist until the user consumes them.
"""
from __future__ import annotations

import atexit
import contextlib
import queue
import threading
import time
import weakref
from typing import Any, Iterator, Sequence

import numpy as np

from . import _consumer, _on_error, _pairs, _per_frame, _switch_interval
from ._image_layout import input_layout  # the one check of the layouts a schema declares
from ._operator import Operator, SampleError, Workspace, sample_error_from_engine
from .tensors import TensorListCPU

STARVED_SMOOTHING = 0.1  # of the consumer's share of time waiting for batches (Executor.starved_share)


class PipelineError(RuntimeError):
    """An operator failed while running an iteration."""


class PipelineIndexError(PipelineError, IndexError):
    """An operator failed on an index out of range (an axis, an element): catchable as IndexError too,
    as DALI's run-time errors of that kind are."""


class PipelineValueError(PipelineError, ValueError):
    """An operator failed on a bad value (an argument that does not fit its input): catchable as
    ValueError too, as DALI's run-time errors of that kind are from Python."""


def pipeline_error(op: Operator, exc: BaseException, inputs: Sequence[Any]) -> PipelineError:
    """``exc``, raised by ``op`` on ``inputs``, as the pipeline reports it."""
    cls = (PipelineIndexError if isinstance(exc, IndexError) else
           PipelineValueError if isinstance(exc, ValueError) else PipelineError)
    return cls(_describe_failure(op, exc, inputs))


class Iteration:
    __slots__ = ("index", "epoch", "batch_size", "fed", "values", "results", "error", "done", "gates", "queued",
                 "partner", "members", "parts")

    def __init__(self, index: int, epoch: int, batch_size: int, fed: dict):
        self.index = index
        self.epoch = epoch
        self.batch_size = batch_size
        self.fed = fed
        self.values: dict = {}
        self.results: tuple | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.gates: list[threading.Semaphore] = []  # queue slots this iteration holds
        self.queued = False  # submitted to the executor (one that failed while scheduled is not)
        self.partner: Iteration | None = None  # submitted right after it, to run the GPU stages with it
        # two iterations run as one through the GPU stages (_pairs): the two, and per iteration its
        # (index, epoch, samples), in the batch's order
        self.members: tuple[Iteration, ...] = ()
        self.parts: tuple[tuple[int, int, int], ...] = ()


class OpStats:
    __slots__ = ("runs", "seconds", "output_bytes", "total_bytes", "memory", "real", "reserved", "max_real",
                 "max_reserved", "timeline")

    def __init__(self, memory: bool = False) -> None:
        self.runs = 0
        self.seconds = 0.0
        self.output_bytes = 0
        self.total_bytes = 0  # of every run's output buffers
        # (start, end, thread id, iteration, output bytes) of each run while a profiler records it
        # (penstock.profiler)
        self.timeline: list[tuple[float, float, int, int, int]] | None = None
        # with ``memory`` (enable_memory_stats), per output, bytes of this iteration's samples (real)
        # and of its buffer (reserved), and their peaks: work per operator and batch that is not
        # done unless asked for
        self.memory = memory
        self.real: list[int] = []
        self.reserved: list[int] = []
        self.max_real: list[int] = []
        self.max_reserved: list[int] = []

    def record_outputs(self, outs: Sequence[Any]) -> None:
        reserved = [int(out._buf.nbytes) for out in outs]
        self.output_bytes = sum(reserved)
        self.total_bytes += self.output_bytes
        if not self.memory:
            return
        self.real = [int(np.prod(out._shapes, axis=1).sum()) * out._buf.itemsize for out in outs]
        self.reserved = reserved
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


def _no_samples(op: Operator) -> list:
    return [TensorListCPU([]) for _ in op.node.outputs]


def _fail(op: Operator, exc: BaseException, inputs: Sequence[Any]) -> None:
    raise pipeline_error(op, exc, inputs) from exc


class Executor:
    _live: "weakref.WeakSet[Executor]" = weakref.WeakSet()

    def __init__(self, stages: Sequence[Sequence[Operator]], output_refs: Sequence[tuple[int, int]],
                 pool: Any, exec_async: bool, exec_pipelined: bool, device: Any = None,
                 queue_sizes: tuple[int, int] = (1, 1), memory_stats: bool = False):
        self.stages = [list(s) for s in stages if s]
        self.device = device  # the pipeline's DeviceContext, when it has GPU operators
        self.output_refs = list(output_refs)
        self.pool = pool
        self.stats: dict[str, OpStats] = {op.name: OpStats(memory_stats) for s in self.stages for op in s}
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
        self._queues: list[queue.SimpleQueue] = []
        self._closed = False
        self._cpu_gate_released_at = -1
        self._first_gpu = -1  # the first group of GPU operators, where two iterations may become one
        self._refills = _on_error.plan(flat)  # decoders with on_error="skip"; may refuse the graph
        self.exec_async = exec_async
        self._shortened_switch = exec_async and device is not None
        if self._shortened_switch:
            _switch_interval.acquire()
        # the stages' threads let the thread that waits for the outputs run its Python first, while
        # the pipeline is ahead of it (_consumer.py): iterations submitted and not yet handed out, and
        # whether the consumer is waiting for one
        if exec_async and device is not None:
            _consumer.enable()
        self._defers = exec_async and device is not None and _consumer.enabled()
        self._on_the_way = 0
        self._consumer_waits = False
        # the share of its time the consumer spends waiting for its batches, smoothed over the last
        # ~STARVED_SMOOTHING**-1 (starved_share), and when it last took one
        self._starved = 0.0
        self._last_taken: float | None = None
        # iterations paired through the GPU stages (_pairs): whether they may be, whether the last one
        # to reach them was small enough; while a pair that failed runs again one iteration at a
        # time, no other GPU operator runs (_recover)
        self._pairs = False
        self._pairs_small = False
        self._world = threading.Condition()
        self._gpu_busy = 0
        self._recovering = False
        if exec_async:
            groups = _pipelined_groups(self.stages) if exec_pipelined else [[op for s in self.stages for op in s]]
            self._groups = groups
            # queue gates (pipelined with GPU stages): slots taken before a group runs
            self._gates: list[threading.Semaphore | None] = [None] * len(groups)
            on_gpu = [any(op.device != "cpu" for op in g) for g in groups]
            if exec_pipelined and any(on_gpu) and not all(on_gpu):
                first_gpu = self._first_gpu = on_gpu.index(True)
                self._pairs = _pairs.enabled() and self._pairable(groups[first_gpu:])
                # a pair takes two slots of each queue: with twice the slots, a pair is made while the
                # consumer takes the last one's two batches
                slots = 2 if self._pairs else 1
                self._gates[0] = threading.Semaphore(slots * queue_sizes[0])
                self._gates[first_gpu] = threading.Semaphore(slots * queue_sizes[1])
                self._cpu_gate_released_at = first_gpu
            # C queues: a stage blocked on its inbox gives the GIL away once, where queue.Queue's
            # Python condition took locks (and the GIL) several times around each hand-over
            self._queues = [queue.SimpleQueue() for _ in groups]
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
            # inside a conditional branch the batch is the branch's samples (always one of the inputs)
            ref = node.batch_ref
            batch_key = (ref.source.id, ref.index) if ref is not None else None
            check = input_layout if op.schema.input_layouts and inputs else None
            plan = self._plans[id(op)] = (inputs, arg_inputs, drop, self.stats[op.name], batch_key, check)
        return plan

    def defer_to_consumer(self, max_us: int | None = None) -> int:
        """Before a batch's Python on a pipeline thread: waits while the consumer runs Python, if the
        pipeline is ahead of it (the batch it takes next has another behind it, and it is not waiting
        for one); at most ``max_us`` (default: a run's budget). The microseconds waited."""
        if not self._defers or self._on_the_way < 2 or self._consumer_waits:
            return 0
        return _consumer.defer(max_us)

    def starved_share(self) -> float:
        """The share of its time the consumer recently spent waiting for the pipeline's batches: near
        1 when the pipeline holds it up (a benchmark of the pipeline alone, a light model), near 0 when
        it keeps ahead (its batches wait for the consumer)."""
        return self._starved

    def without_turn(self) -> None:
        """The consumer takes its batches by ``run()``, which keeps the prefetch depth on the way while
        its caller works: the pipeline's threads then give that caller no turn (``defer_to_consumer``).
        Beside a caller running Python without pause they waited for it to their bound: on an H100
        (2026-12-07, gil_probe, 16 threads, batch 256, medians of 3) run() waited 4.11 ms a 13 ms step
        with the turn and 1.31 without, 3.11 and 0.62 at 20 ms."""
        self._defers = False

    def run_ops(self, ops: Sequence[Operator], it: Iteration) -> None:
        values = it.values
        budget = _consumer.budget() if self._defers else 0  # of waits for the consumer, this batch
        for op in ops:
            if budget > 0:
                budget -= self.defer_to_consumer(budget)
            in_keys, arg_keys, drop, stats, batch_key, check_layout = self._plan(op)
            inputs = [values[key] for key in in_keys]
            arg_inputs = {k: values[key] for k, key in arg_keys}
            batch_size = it.batch_size if batch_key is None else len(values[batch_key])
            on_gpu = op.device != "cpu"
            if on_gpu:
                self._complete(list(inputs) + list(arg_inputs.values()))
            ws = Workspace(inputs, arg_inputs, batch_size, it.index, it.epoch, self.pool,
                           it.fed.get(op.node.id), op, self.device if on_gpu else None, self.defer_to_consumer,
                           self.starved_share, it.parts)
            if check_layout is not None and len(inputs[0]):
                check_layout(op, inputs[0])  # DALI's argument error, raised as is
            start = time.perf_counter()
            try:
                if batch_size == 0 and batch_key is not None:
                    outs = _no_samples(op)  # a conditional branch that no sample reached
                else:
                    run = _per_frame.run_per_frame if _per_frame.has_per_frame_args(ws) else type(op).run
                    if on_gpu:
                        with self.device:
                            outs = run(op, ws)
                    else:
                        outs = run(op, ws)
            except BaseException as exc:  # noqa: BLE001 - reported at outputs()
                if isinstance(exc, PipelineError):  # an operator that runs others names the one that failed
                    raise
                if id(op) not in self._refills:
                    raise pipeline_error(op, exc, inputs) from exc
                outs, inputs = _on_error.run_refilling(self, op, it, exc, self._refills[id(op)], in_keys,
                                                       arg_keys, lambda e, ins: _fail(op, e, ins))
            end = time.perf_counter()
            stats.seconds += end - start
            stats.runs += 1
            node_id = op.node.id
            for i, out in enumerate(outs):
                if getattr(out, "_deferred", None) is not None:
                    out._deferred_by = op  # its failures are this operator's, whoever completes it
                if inputs:
                    src = out._source_info
                    if src is not inputs[0]._source_info and len(out) == len(inputs[0]) and not any(src):
                        out._source_info = inputs[0]._source_info
                values[(node_id, i)] = out
            stats.record_outputs(outs)
            if stats.timeline is not None:
                stats.timeline.append((start, end, threading.get_ident(), it.index, stats.output_bytes))
            for key in drop:
                values.pop(key, None)

    def _complete(self, values: Sequence[Any]) -> None:
        """GPU batches whose filling was deferred (mixed decoding in the background) are queued on
        the stream before anything reads them; a failure is reported as the producing operator's."""
        for v in values:
            if getattr(v, "_deferred", None) is not None:
                try:
                    with self.device:
                        v._complete()
                except BaseException as exc:  # noqa: BLE001 - reported at outputs()
                    raise pipeline_error(v._deferred_by, exc, [v]) from exc

    def finish(self, it: Iteration) -> None:
        it.results = tuple(it.values[ref] for ref in self.output_refs)
        it.values = {}
        if it.members:
            self._finish_pair(it)
            return
        # Outputs still decoding in the background (a mixed decoder's output is a pipeline output)
        # are completed by whoever waits for the iteration: waiting for them here would keep this
        # stage's worker from starting the next iteration's decoding meanwhile.
        if self.device is not None and not _deferred(it.results):
            self._stamp(it.results)

    def _finish_pair(self, pair: Iteration) -> None:
        """The outputs of two iterations run as one, cut into each one's batches (views of the same
        buffers)."""
        results = pair.results
        counts = [member.batch_size for member in pair.members]
        if any(len(out) != sum(counts) for out in results):
            raise RuntimeError(f"a pair of iterations gave outputs of {[len(out) for out in results]} samples "
                               f"for {sum(counts)}")
        parts = [_pairs.split(out, counts) for out in results]
        for k, member in enumerate(pair.members):
            member.results = tuple(each[k] for each in parts)
            member.values = {}
            if self.device is not None:
                self._stamp(member.results)

    def _stamp(self, results: Sequence[Any]) -> None:
        """The iteration is done on the GPU when this event is."""
        event = self.device.record()
        for out in results:
            if hasattr(out, "_event"):
                out._event, out.stream = event, self.device.stream

    def release(self, it: Iteration) -> None:
        """The user consumed the iteration: its GPU output slot is free."""
        while it.gates:
            it.gates.pop().release()

    def submit(self, it: Iteration) -> None:
        if self._closed:
            raise RuntimeError("the pipeline's executor has been shut down")
        it.queued = True
        self._on_the_way += 1
        if not self.exec_async or not self._queues:  # no queues: a graph without operators
            run_iteration_inline(self, it)
        else:
            self._queues[0].put(it)

    def submit_pair(self, first: Iteration, second: Iteration) -> None:
        """Two iterations in a row (``wants_pairs``): through the GPU stages as one, where they can."""
        first.partner = second
        self.submit(first)
        self.submit(second)

    def wants_pairs(self) -> bool:
        """Whether the pipeline should submit its iterations in pairs (``submit_pair``): its GPU
        stages can run two as one, the last iteration to reach them was small enough, and the
        consumer is not waiting for the iteration it schedules (``run()``: the first of a pair waits
        for the second's host stages)."""
        return self._pairs and self._pairs_small and not self._consumer_waits

    def _pairable(self, groups: Sequence[Sequence[Operator]]) -> bool:
        """Whether every operator of the GPU stages computes each sample of its own (``_pairs``), and
        none of them gives the pipeline an output it fills later (cut in two, it would be completed
        by the consumer, where a failure could not be told apart by iteration)."""
        outputs = {source for source, _ in self.output_refs}
        return not self._refills and all(getattr(op, "pairs_iterations", False) and op.node.batch_ref is None
                                         and not (op.fills_later and op.node.id in outputs)
                                         for ops in groups for op in ops)

    @contextlib.contextmanager
    def consumer_waiting(self) -> Iterator[None]:
        """The consumer schedules a batch and then waits for one (``run()``): the batch scheduled is
        not one ahead of it, so no pipeline thread defers to it in between."""
        self._consumer_waits = True
        try:
            yield
        finally:
            self._consumer_waits = False

    def wait(self, it: Iteration) -> tuple:
        if self._defers:
            _consumer.consuming()
        self._consumer_waits = True
        started = time.perf_counter()
        try:
            while not it.done.wait(0.1):
                if self._closed:
                    raise RuntimeError("the pipeline was shut down while an iteration was running")
                if not all(t.is_alive() for t in self._threads):
                    raise RuntimeError("a pipeline worker thread died unexpectedly")
        finally:  # in this order: a pipeline thread never sees the consumer back with two still on the way
            self._on_the_way -= it.queued
            self._consumer_waits = False
        if it.error is not None:
            raise it.error
        assert it.results is not None
        if self.device is not None and _deferred(it.results):
            self._complete(it.results)  # (waits for the decoding of a mixed decoder's batch, say)
            self._stamp(it.results)
        self._took_batch(started)
        return it.results

    def _took_batch(self, waited_since: float) -> None:
        """The consumer got a batch it waited for since ``waited_since`` (for the iteration, then for
        its outputs' deferred work): its share of time waiting, over the time since it took the one
        before."""
        now = time.perf_counter()
        if self._last_taken is not None and now > self._last_taken:
            share = (now - waited_since) / (now - self._last_taken)
            self._starved += STARVED_SMOOTHING * (min(share, 1.0) - self._starved)
        self._last_taken = now

    def _enter(self, group: int, it: Iteration) -> bool:
        """An iteration arrives at a group's worker: the queue slot it needs there, if any (False
        when the executor shut down while it waited)."""
        gate = self._gates[group]
        if gate is not None:
            if not self._take(gate):
                return False
            if group == self._cpu_gate_released_at and it.gates:
                it.gates.pop().release()  # the iteration leaves the CPU queue
            it.gates.append(gate)
        if group == self._first_gpu and self._pairs and it.error is None:
            self._pairs_small = 2 * _pairs.host_bytes(it.values) <= _pairs.PAIR_HOST_BYTES
        return True

    def _paired(self, first: Iteration, second: Iteration) -> Iteration | None:
        """Two iterations as one, for the GPU stages; None where they run one after the other."""
        if first.error is not None or second.error is not None or first.fed or second.fed:
            return None
        if not _pairs.mergeable(first.values, second.values):
            return None
        pair = Iteration(first.index, first.epoch, first.batch_size + second.batch_size, {})
        pair.values = _pairs.merged(first.values, second.values, self.pool)
        pair.members = (first, second)  # (their values stay, for _recover)
        pair.parts = tuple((m.index, m.epoch, m.batch_size) for m in pair.members)
        return pair

    def _work(self, group: int, it: Iteration, outbox: queue.SimpleQueue | None) -> None:
        """Runs a group's operators on an iteration (the last group's finishes it) and hands it on."""
        if it.error is None:
            try:
                self._run_group(group, it, outbox is None)
            except BaseException as exc:  # noqa: BLE001 - reported at outputs()
                if it.members:
                    self._recover(it)
                    return
                it.error = exc
                it.values = {}
        if outbox is not None:
            outbox.put(it)
        else:
            for done in it.members or (it,):
                done.done.set()

    def _run_group(self, group: int, it: Iteration, last: bool) -> None:
        with self._gpu_turn(self._pairs and group >= self._first_gpu):
            self.run_ops(self._groups[group], it)
            if last:
                self.finish(it)

    @contextlib.contextmanager
    def _gpu_turn(self, counted: bool) -> Iterator[None]:
        """A GPU group's run, ``counted`` among those a pair's recovery waits out (``_recover``);
        while one recovers, none starts."""
        if not counted:
            yield
            return
        with self._world:
            while self._recovering:
                self._world.wait()
            self._gpu_busy += 1
        try:
            yield
        finally:
            with self._world:
                self._gpu_busy -= 1
                self._world.notify_all()

    def _recover(self, pair: Iteration) -> None:
        """A pair that failed runs again through the GPU stages, one iteration at a time on this
        thread, each failing or not on its own samples, as it would have alone; meanwhile no other
        GPU operator runs (an operator runs on one thread at a time)."""
        with self._world:
            while self._recovering:
                self._world.wait()
            self._recovering = True
            while self._gpu_busy:
                self._world.wait()
        try:
            for member in pair.members:
                try:
                    for group in range(self._first_gpu, len(self._groups)):
                        self.run_ops(self._groups[group], member)
                    self.finish(member)
                except BaseException as exc:  # noqa: BLE001 - reported at outputs()
                    member.error = exc
                    member.values = {}
                member.done.set()
        finally:
            with self._world:
                self._recovering = False
                self._world.notify_all()

    def _take(self, gate: threading.Semaphore) -> bool:
        """Waits for a queue slot; False when the executor shut down meanwhile."""
        while not gate.acquire(timeout=0.1):
            if self._closed:
                return False
        return True

    @property
    def threads(self) -> list[threading.Thread]:
        """The stages' worker threads (none when it runs them inline)."""
        return list(self._threads)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if getattr(self, "_shortened_switch", False):  # (not set when the constructor refused the graph)
            _switch_interval.release()
        for q in self._queues:
            q.put(None)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=10)
        self._threads = []

    def __del__(self) -> None:
        self.shutdown()


def _deferred(values: Sequence[Any]) -> bool:
    return any(getattr(v, "_deferred", None) is not None for v in values)


def _pipelined_groups(stages: Sequence[Sequence[Operator]]) -> list[list[Operator]]:
    """One worker per stage, and operators that run Python code (``runs_python``) apart from the
    native ones around them: a Python function holds the GIL, so on its own worker it overlaps the
    next iteration's native kernels instead of running in line with them."""
    groups: list[list[Operator]] = []
    for ops in stages:
        start = len(groups)
        for op in ops:
            py = getattr(op, "runs_python", False)
            if len(groups) == start or getattr(groups[-1][-1], "runs_python", False) != py:
                groups.append([])
            groups[-1].append(op)
    return groups


def run_iteration_inline(ex: Executor, it: Iteration) -> None:
    try:
        for ops in ex.stages:
            ex.run_ops(ops, it)
        ex.finish(it)
    except BaseException as exc:  # noqa: BLE001
        it.error = exc
        it.values = {}
    it.done.set()


def _stage_worker(ex_ref: "weakref.ref[Executor]", group: int, inbox: queue.SimpleQueue,
                  outbox: queue.SimpleQueue | None) -> None:
    # Holds the executor only while working on an iteration, so a dropped pipeline is freed.
    while True:
        it = inbox.get()
        if it is None:
            if outbox is not None:
                outbox.put(None)
            return
        ex = ex_ref()
        if ex is None or not ex._enter(group, it):
            return
        partner = it.partner if group == ex._first_gpu else None
        if partner is not None:
            if inbox.get() is not partner:  # (submitted right after it: the stages keep the order) shut down
                if outbox is not None:
                    outbox.put(None)
                return
            if not ex._enter(group, partner):
                return
            pair = ex._paired(it, partner)
            if pair is None:  # one after the other
                ex._work(group, it, outbox)
                it = partner
            else:
                it = pair
        ex._work(group, it, outbox)
        del ex


@atexit.register
def _shutdown_all() -> None:
    for ex in list(Executor._live):
        ex.shutdown()
