"""Running a pipeline: scheduling iterations, handing out their outputs, and feeding inputs."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Sequence

from .. import _checkpoint
from .._executor import Iteration
from ..data_node import DataNode
from ..types import PipelineAPIType


def one_caller(method: Callable) -> Callable:
    """``method`` runs while no other thread runs one of the pipeline's run methods (their lock is
    re-entrant: run() calls schedule_run()). So several threads may drive one pipeline, say a
    training loop and a prefetch thread: each call takes a whole iteration, the next one, in the
    order the calls get the lock. A source or ``iter_setup`` that calls one of them on its own
    pipeline would wait for itself: that is an error."""
    @functools.wraps(method)
    def serialized(self, *args: Any, **kwargs: Any) -> Any:
        with self._run_lock:
            if self._calling_sources:
                raise RuntimeError(f"{method.__name__}() was called inside this pipeline's own source or "
                                   "iter_setup, which run while the pipeline schedules an iteration; "
                                   "call it from outside the pipeline")
            return method(self, *args, **kwargs)
    return serialized


class PipelineRun:
    """The run APIs: a base of Pipeline, working on the state its constructor and build set.

    ``run()``, ``schedule_run()``, ``outputs()``, ``share_outputs()``, ``release_outputs()``,
    ``reset()`` and ``checkpoint()`` may be called from several threads: one call at a time runs
    (see ``one_caller``). Beyond DALI, whose pipelines fail or deadlock when two threads call them.
    """

    @contextlib.contextmanager
    def _check_api(self, kind: PipelineAPIType):
        if self._api_check:
            if self._api_type is None:
                self._api_type = kind
            elif self._api_type != kind:
                raise RuntimeError(f"Mixing pipeline API type. Currently used: {self._api_type}, "
                                   f"but trying to use {kind}")
        prev, self._api_check = self._api_check, False
        try:
            yield
        finally:
            self._api_check = prev

    def enable_api_check(self, enable: bool) -> None:
        self._api_check = bool(enable)

    @contextlib.contextmanager
    def _api_check_disabled(self):
        prev, self._api_check = self._api_check, False
        try:
            yield
        finally:
            self._api_check = prev

    def _iter_setup_defined(self) -> bool:
        return type(self).iter_setup is not PipelineRun.iter_setup

    def iter_setup(self) -> None:
        """Deprecated hook, called before every iteration (typically to feed_input)."""

    def _schedule_one(self) -> bool | None:
        """Schedules one iteration; False at the end of the epoch, None when a blocking push source
        has no data yet while earlier iterations are pending (run() returns those first).

        A failure while gathering the iteration's inputs (``iter_setup``, a source, nothing fed)
        belongs to that iteration: it is raised when its outputs are asked for, after every
        earlier iteration has been handed out (DALI 2.4 fails an unfed iteration so; for a
        source that raises it loses the iterations before it, which penstock hands out)."""
        if self._last_iter:
            return False
        if self._pending and not all(op.ready() for op in self._source_ops if hasattr(op, "ready")):
            return None
        fed: dict[int, Any] = {}
        batch = self._max_batch_size
        error: Exception | None = None
        self._calling_sources = True
        try:
            if self._iter_setup_defined():
                self.iter_setup()
            sizes: dict[str, int] = {}
            ended = False
            for op in self._source_ops:
                try:
                    data = op.fetch(self._epoch, self._iter_in_epoch, self._max_batch_size)
                except StopIteration:
                    # the other sources are asked still, as DALI does: each that ends too rewinds now
                    # (cycle="raise"), so that all of them start the next epoch together
                    ended = True
                    continue
                fed[op.node.id] = data
                sizes[op.name] = len(data[0] if isinstance(data, (list, tuple)) else data)
            if ended:
                raise StopIteration
            batch = self._batch_size_of(sizes)
        except StopIteration:
            self._last_iter = True
            return False
        except Exception as exc:  # noqa: BLE001 - this iteration's failure, raised at its outputs
            error = exc
        finally:
            self._calling_sources = False
        it = self._numbered(batch, fed)
        if error is None:
            self._executor.submit(it)
        else:
            it.fed, it.error = {}, error
            it.done.set()
        self._pending.append(it)
        return True

    def _numbered(self, batch: int, fed: dict) -> Iteration:
        """The next iteration, counted."""
        it = Iteration(self._iteration, self._epoch, batch, fed)
        if self._enable_checkpointing:
            _checkpoint.scheduled(self, it.index)
        self._iteration += 1
        self._iter_in_epoch += 1
        return it

    def _schedule_pair(self) -> None:
        """Schedules two iterations to run the GPU stages as one (``_pairs_now``)."""
        pair = [self._numbered(self._max_batch_size, {}) for _ in range(2)]
        self._executor.submit_pair(*pair)
        self._pending.extend(pair)

    def _pairs_now(self) -> bool:
        """Whether to schedule iterations in pairs, for the executor to run each pair through the GPU
        stages as one (penstock._pairs): it can, and the pipeline's iterations need nothing from the
        caller's process when they are scheduled (no input operator's data, no ``iter_setup``)."""
        wants = getattr(self._executor, "wants_pairs", None)  # (a pipeline process's executor has none)
        return wants is not None and wants() and not self._source_ops and not self._iter_setup_defined()

    def _batch_size_of(self, sizes: dict[str, int]) -> int:
        """The iteration's batch size: the one all sources gave (max_batch_size without sources)."""
        if len(set(sizes.values())) > 1:
            raise RuntimeError(f"the sources of this pipeline gave batches of different sizes: {sizes}")
        batch = next(iter(sizes.values())) if sizes else self._max_batch_size
        if batch > self._max_batch_size:
            raise RuntimeError(f"a source gave a batch of {batch} samples, more than the pipeline's "
                               f"max_batch_size {self._max_batch_size}")
        return batch

    @one_caller
    def schedule_run(self) -> None:
        """Schedules the iterations owed: the prefetch depth at first, then one a call; in pairs
        (``_pairs_now``), twice the depth at first, two at a time (one owed waits for the next)."""
        with self._check_api(PipelineAPIType.SCHEDULED):
            self.build()
            first = self._first_iter and self._exec_pipelined
            depth = max(self._cpu_queue_size, self._gpu_queue_size)
            self._owed += depth if first else 1
            pairs = self._pairs_now()
            if pairs and not self._paired_depth:  # a pair on the way while the consumer takes the last one's
                self._owed += depth
                self._paired_depth = True
            while self._owed:
                if pairs and self._owed >= 2:
                    self._schedule_pair()
                    self._owed -= 2
                    continue
                if pairs and self._pending:
                    break
                scheduled = self._schedule_one()
                if scheduled is None:
                    break
                self._owed = self._owed - 1 if scheduled else 0
            self._first_iter = False

    def _pop_outputs(self) -> tuple:
        if not self._pending:
            raise StopIteration
        it = self._pending.popleft()
        try:
            results = self._executor.wait(it)
        finally:
            self._executor.release(it)
            if self._enable_checkpointing:
                _checkpoint.consumed(self, it.index)
        self._check_outputs(results)
        return results

    @one_caller
    def outputs(self, cuda_stream: Any = None) -> tuple:
        with self._check_api(PipelineAPIType.SCHEDULED):
            self._check_stream_arg(cuda_stream)
            return self._pop_outputs()

    @one_caller
    def share_outputs(self, cuda_stream: Any = None) -> tuple:
        with self._check_api(PipelineAPIType.SCHEDULED):
            self._check_stream_arg(cuda_stream)
            if self._shared_unreleased and not self._exec_dynamic:
                raise RuntimeError("share_outputs: release_outputs() must be called before the next "
                                   "share_outputs() (buffers are reused without exec_dynamic)")
            results = self._pop_outputs()
            self._shared_unreleased = True
            return results

    @one_caller
    def release_outputs(self) -> None:
        with self._check_api(PipelineAPIType.SCHEDULED):
            # Output buffers are never recycled while the caller holds them, so releasing only
            # ends the share_outputs/release_outputs pairing.
            self._shared_unreleased = False

    def _check_stream_arg(self, cuda_stream: Any) -> None:
        if cuda_stream is not None and not self._exec_dynamic:
            raise ValueError("cuda_stream in outputs() requires exec_dynamic=True")

    @one_caller
    def run(self, cuda_stream: Any = None, /, **pipeline_inputs: Any) -> tuple:
        with self._check_api(PipelineAPIType.BASIC):
            self.build()
            if pipeline_inputs:
                if self._exec_pipelined and max(self._cpu_queue_size, self._gpu_queue_size) > 1:
                    raise RuntimeError("run() with pipeline inputs needs prefetch_queue_depth=1 or "
                                       "exec_pipelined=False, so each input is used by the run that receives it")
                for name, data in pipeline_inputs.items():
                    self.feed_input(name, data)
            self._check_stream_arg(cuda_stream)
            executor = self._executor  # none in debug mode: each operator runs as it is called
            with executor.consumer_waiting() if executor is not None else contextlib.nullcontext():
                if self._scheduled_ahead:  # the last run() scheduled this one's iteration
                    self._scheduled_ahead = False
                else:
                    self.schedule_run()
                results = self._pop_outputs()
            if not pipeline_inputs and self._runs_ahead():
                executor.without_turn()
                self._scheduled_ahead = self._schedule_one() is True
            return results

    def _runs_ahead(self) -> bool:
        """Whether ``run()`` schedules the next run's iteration before it returns, so that the
        prefetch depth's iterations are on the way while the caller works between runs (scheduled
        at the next call, only depth - 1 are: a training step's Python then waits for a batch that
        made little progress beside it), and the pipeline's threads give the caller no turn
        (``Executor.without_turn``). Only where scheduling takes nothing from the caller, no input
        operator's data nor ``iter_setup`` (nor in debug mode, which has no executor), and a GPU
        stage's host side needs the time. On an H100 (2026-12-07, gil_probe, 16 threads, batch 256,
        medians of 3) run() waited 1.31 ms a 13 ms Python step (3.95 before), 0.62 at 20 ms (0.90)
        and 0.36 at 30 ms (0.36)."""
        return (self._executor is not None and self._gpu is not None
                and self._exec_async and self._exec_pipelined and max(self._cpu_queue_size, self._gpu_queue_size) > 1
                and not self._source_ops and not self._iter_setup_defined())

    def empty(self) -> bool:
        return not self._pending

    @one_caller
    def reset(self) -> None:
        if self._last_iter:
            self._last_iter = False
            self._first_iter = True
            self._paired_depth = False
            self._epoch += 1
            self._iter_in_epoch = 0
            for op in self._source_ops if self._built else ():
                op.reset_epoch()

    def _check_outputs(self, results: Sequence[Any]) -> None:
        for spec, name, get in ((self._output_dtype, "output_dtype", lambda t: t.dtype),
                                (self._output_ndim, "output_ndim", lambda t: t.ndim()),
                                (self._output_layout, "output_layout", lambda t: str(t.layout()))):
            if spec is None:
                continue
            expected = spec if isinstance(spec, (list, tuple)) else [spec] * len(results)
            if len(expected) != len(results):
                raise RuntimeError(f"{name} lists {len(expected)} entries but the pipeline has "
                                   f"{len(results)} outputs")
            for i, (want, tl) in enumerate(zip(expected, results)):
                if want is not None and get(tl) != want:
                    raise RuntimeError(f"output {i}: {name} is {want} but the pipeline produced {get(tl)}")

    def _input_op(self, name: str, missing: str) -> Any:
        """The built input operator (an external source, an ``fn.inputs`` operator) named ``name``;
        KeyError with ``missing`` (DALI's words) when the pipeline has none: not an input, or one
        pruned from the graph."""
        self.build()
        for op in self._ops:
            if op.name == name and hasattr(op, "feed"):
                return op
        raise KeyError(missing)

    def feed_input(self, data_node: Any, data: Any, layout: str | None = None, cuda_stream: Any = None,
                   use_copy_kernel: bool = False) -> None:
        name = data_node.source.name if isinstance(data_node, DataNode) else str(data_node)
        op = self._input_op(name, f'Could not find an input operator with name "{name}"')
        op.feed(data, layout, cuda_stream, use_copy_kernel)

    def input_feed_count(self, input_name: str) -> int:
        """How many batches to feed ahead: the prefetch depth, as DALI 2.4 answers (whatever is
        queued already)."""
        self._input_op(input_name, f"The pipeline doesn't have an input named \"{input_name}\".")
        return max(self._cpu_queue_size, self._gpu_queue_size)
