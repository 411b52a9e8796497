"""``fn.external_source``: batches from Python (callables, iterables, generators, feed_input).

The source is called in the thread that schedules iterations (the caller of run()), ahead of
consumption by the prefetch depth, exactly like DALI; StopIteration ends the epoch.

Memory: with ``no_copy=False`` (the default) what the source returns, or what ``feed_input``
receives, is copied before the call returns, so the caller may refill its buffer at once. With
``no_copy=True`` a single array (or TensorListCPU) is used as the operator's output without a
copy: it must stay unchanged from the call that hands it over until the ``run()`` that returns
that iteration has returned and no output that passes it through (the external source itself
as a pipeline output, or views of it) is in use any more; the source is called up to the
pipeline's ``prefetch_queue_depth`` iterations before its ``run()``. A list of per-sample arrays
is always packed into one batch (one native copy, the GIL released, overlapping the previous
iteration's work).

``parallel=True`` runs the source in ``py_num_workers`` worker processes (penstock._parallel);
batches come back through shared memory with one copy in all. The pipeline owns a few anonymous
shared-memory regions per source; a worker copies what the source returned (once, natively)
straight into a region at the batch's final offsets: per-output, samples back to back. In
per-sample mode, where the samples of one batch are split over the workers, each worker reports
the size of its part as soon as it is computed, a thread of the pipeline places the parts next
to each other once all sizes are known, and each worker then writes its part there (between
two samples of its next task), so the batch is packed as if one process had made it. The batch the external source outputs is a view of that region, not a copy.

``no_copy`` is implied (``no_copy=False`` is an error): the worker keeps the arrays the source
returned, without copying them, until it writes them into the region, which in per-sample mode
happens once every part of that batch is computed (the worker may have called the source for
later samples meanwhile), so a source must not refill an array it returned earlier; returning a
new array per call is always safe. A region is written again only after the batch in it and
every view of it (pipeline outputs that pass it through, ``as_array()``/``as_tensor()`` results,
DLPack exports) have been freed; a batch kept alive simply makes the pool use another region.
Regions grow on demand (``bytes_per_sample_hint`` sizes the first ones);
``Pipeline.external_source_shm_statistics()`` lists them.
"""
from __future__ import annotations

import collections
import inspect
import threading
import warnings
from typing import Any

from .. import _engine
from .._generate import OpsBase, call_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._sources import (SourceCaller, SourceThread, check_parallel_source, cycle_mode, is_generator_function,
                        positional_arity, source_timeout_error, thread_stacks, wrap_source_error)
from ..tensors import TensorListCPU
from ..types import SampleInfo
from ._external_source_batches import check_batch, pack_samples, to_batch

EXTERNAL_SOURCE = OpSchema(
    "ExternalSource", "Data produced by Python: a callable, an iterable, or batches given with feed_input.",
    args=[Arg("source", ArgType.ANY, optional=True, doc="callable, iterable or generator function"),
          Arg("num_outputs", ArgType.INT, optional=True, doc="number of outputs the source returns"),
          Arg("cycle", ArgType.ANY, optional=True, doc="restart an exhausted iterable: True/'quiet', 'raise', None/False/'no'"),
          Arg("layout", ArgType.ANY, optional=True, doc="layout (or one per output)"),
          Arg("dtype", ArgType.ANY, optional=True, doc="expected type (or one per output)"),
          Arg("ndim", ArgType.ANY, optional=True, doc="expected number of dimensions (or one per output)"),
          Arg("cuda_stream", ArgType.ANY, optional=True, doc="stream of GPU inputs"),
          Arg("use_copy_kernel", ArgType.BOOL, False),
          Arg("blocking", ArgType.BOOL, False, doc="push mode: wait for fed data"),
          Arg("batch", ArgType.BOOL, True, doc="the source gives whole batches (else one sample per call)"),
          Arg("repeat_last", ArgType.BOOL, False, doc="push mode: reuse the last batch when nothing new was fed"),
          Arg("parallel", ArgType.BOOL, False, doc="run the source in worker processes"),
          Arg("no_copy", ArgType.BOOL, optional=True, doc="use the source's memory without copying"),
          Arg("prefetch_queue_depth", ArgType.INT, optional=True, doc="parallel mode: batches computed ahead"),
          Arg("bytes_per_sample_hint", ArgType.ANY, optional=True,
              doc="parallel mode: initial shared-memory bytes per sample (slots grow on demand)"),
          Arg("batch_info", ArgType.BOOL, False, doc="call a batch source with BatchInfo instead of the iteration")],
    min_inputs=0, max_inputs=0, num_outputs=lambda a: a.get("num_outputs") or 1,
    devices=("cpu", "gpu"), is_source=True)


class NoDataFed(RuntimeError, IndexError):
    """An iteration of a push-mode external source was scheduled with nothing fed for it: raised when
    its outputs are asked for (catchable as IndexError too, as DALI 2.4's is)."""


def _check_source(source: Any, cycle: Any, batch: bool) -> None:
    mode = cycle_mode(cycle)
    if source is None:
        return
    if is_generator_function(source):
        return
    if callable(source):
        if mode is not None:
            raise ValueError("external_source: 'cycle' applies to iterables and generator functions, not callables")
        positional_arity(source)
        return
    if inspect.isgenerator(source) and mode is not None:
        raise TypeError("external_source: Cannot cycle through a generator - if the generator is a result of calling "
                        "a generator function, pass that function instead as `source`.")
    try:
        iter(source)
    except TypeError:
        raise TypeError(f"external_source: source must be callable or iterable, got {type(source).__name__}") from None


def _per_output(value: Any, k: int, what: str) -> list:
    if isinstance(value, (list, tuple)) and k > 1:
        if len(value) != k:
            raise ValueError(f"external_source: '{what}' lists {len(value)} entries for {k} outputs")
        return list(value)
    return [value] * k


@register(EXTERNAL_SOURCE, device=("cpu", "gpu"))
class ExternalSource(Operator):
    def __init__(self, node: Any, pipeline: Any):
        super().__init__(node, pipeline)
        # Copies run on the scheduling thread (GIL released) while the pipeline's pool works on
        # earlier iterations; that pool runs one parallel_for at a time, so a copy sent there
        # would wait for a whole decode. A pool of one thread copies on the caller, in overlap.
        self._pool = _engine.ThreadPool(1)
        self._py_pool = getattr(pipeline, "_py_pool", None)
        self._timeout = getattr(pipeline, "_source_timeout", None)
        self._source_thread: SourceThread | None = None  # calls the source when a timeout is set
        self._sample: int | None = None  # the sample the source is asked for (per-sample mode)
        self._hung: str | None = None    # why the source cannot be called any more (it hangs)

    def setup(self) -> None:
        a = self.args
        self.k = a["num_outputs"] or 1
        self.layouts = _per_output(a["layout"], self.k, "layout")
        self.dtypes = _per_output(a["dtype"], self.k, "dtype")
        self.ndims = _per_output(a["ndim"], self.k, "ndim")
        for o, (lay, nd) in enumerate(zip(self.layouts, self.ndims)):
            if lay and nd is not None and len(lay) != nd:
                raise ValueError(f"{self.label}: layout '{lay}' has {len(lay)} dimensions but ndim={nd}"
                                 + (f" (output {o})" if self.k > 1 else ""))
        self.copy = not a["no_copy"]
        self.source = self.node.py_object
        if self.source is None and a["num_outputs"]:
            raise ValueError(f"{self.label}: num_outputs needs a source")
        self._parallel = None
        if a["parallel"]:
            self._parallel = self._py_pool.source(self.name)
            return
        if a["prefetch_queue_depth"] is not None:
            raise ValueError(f"{self.label}: prefetch_queue_depth is only valid with parallel=True")
        self._caller = SourceCaller(self.source, a["batch"], a["batch_info"], cycle_mode(a["cycle"]),
                                     a["num_outputs"])
        if self._timeout is not None and self.source is not None:
            self._source_thread = SourceThread(f"penstock-source-{self.name}")
        self.blocking = bool(a["blocking"])
        self._fed_cv = threading.Condition()
        self.fed: collections.deque = collections.deque()
        self.last_fed: Any = None

    # -- push mode (feed_input may come from another thread while run() waits: blocking=True)
    def feed(self, data: Any, layout: Any = None, cuda_stream: Any = None, use_copy_kernel: bool = False) -> None:
        if self.source is not None:
            raise RuntimeError(f"{self.label}: feed_input cannot be used with an external_source that has a source")
        if self._parallel is not None:
            raise RuntimeError(f"{self.label}: feed_input cannot be used with a parallel external_source")
        # copied now (no_copy=False), so the caller may reuse its buffer as soon as this returns
        batch = to_batch(data, self.label, self._pool, self.copy, self.device, cuda_stream, use_copy_kernel)
        with self._fed_cv:
            self.fed.append((batch, layout))
            self._fed_cv.notify_all()

    def ready(self) -> bool:
        """False only for a blocking push source with nothing fed (the pipeline defers it)."""
        return not (self.source is None and self.blocking and not self.fed)

    # -- pulling a batch
    def _pull(self, epoch: int, iteration: int, batch_size: int) -> list:
        c = self._caller
        if c.batch:
            try:
                result = c.call_batch(epoch, iteration)
            except StopIteration:
                raise
            except Exception as exc:
                raise wrap_source_error(exc, self.label, epoch, iteration) from exc
            return [to_batch(d, self.label, self._pool, self.copy, self.device, self.args["cuda_stream"],
                             bool(self.args["use_copy_kernel"])) for d in c.outputs(result, self.label)]
        samples = []
        for j in range(batch_size):
            self._sample = j
            info = SampleInfo(iteration * batch_size + j, j, iteration, epoch)
            try:
                samples.append(c.sample_outputs(c.call_sample(info), self.label, j))
            except StopIteration:
                raise
            except Exception as exc:
                raise wrap_source_error(exc, self.label, epoch, iteration, j) from exc
        self._sample = None
        return [pack_samples(self._pool, [s[o] for s in samples], self.label)
                for o in range(self.k)]

    def _pull_in_time(self, epoch: int, iteration: int, batch_size: int) -> list:
        """``_pull``, on the source's thread when the pipeline has a source_timeout: a source that
        does not return in time fails this run() and every later one."""
        if self._source_thread is None:
            return self._pull(epoch, iteration, batch_size)
        if self._hung is not None:
            raise RuntimeError(self._hung)
        try:
            return self._source_thread.call(self._pull, (epoch, iteration, batch_size), self._timeout)
        except TimeoutError:
            err = source_timeout_error(self.label, self._timeout, epoch, iteration, self._sample,
                                       f"called in thread '{self._source_thread.thread.name}'",
                                       thread_stacks(self._source_thread.thread.ident))
            self._hung = (f"{self.label}: the source is still running the call that timed out in iteration "
                          f"{iteration} of epoch {epoch}; the pipeline cannot go on: build a new one")
            raise err from None

    def _take_fed(self) -> tuple:
        with self._fed_cv:
            if self.blocking:
                while not self.fed:
                    self._fed_cv.wait()
            if self.fed:
                batch, layout = self.fed.popleft()
                self.last_fed = (batch, layout)
                return batch, layout
        if self.args["repeat_last"] and self.last_fed is not None:
            return self.last_fed
        raise NoDataFed(f"{self.label}: Attempted to peek the data batch that doesn't exist. Add more elements to "
                        "the DALI input operator. (No data was fed with feed_input() for this iteration: feed "
                        "prefetch_queue_depth batches before the first run(), or use blocking=True to wait for "
                        "data.)")

    def fetch(self, epoch: int, iteration: int, batch_size: int) -> list:
        if self._parallel is not None:
            batches = self._parallel.fetch(epoch, iteration)
            layouts = self.layouts
        elif self.source is None:
            batch, layout = self._take_fed()
            if layout and len(layout) != batch.ndim():
                # a layout given to feed_input (unlike a declared one) that cannot apply: user code
                # feeding encoded images "as HWC" runs with DALI, so it is dropped, not an error
                warnings.warn(f"{self.label}: layout '{layout}' given to feed_input does not fit "
                              f"{batch.ndim()}-D samples; it is dropped")
                layout = None
            batches, layouts = [batch], [layout or self.layouts[0]]
        else:
            batches, layouts = self._pull_in_time(epoch, iteration, batch_size), self.layouts
        return [check_batch(tl, lay, dt, nd, self.label)
                for tl, lay, dt, nd in zip(batches, layouts, self.dtypes, self.ndims)]

    def reset_epoch(self) -> None:
        pass  # counters live in the pipeline; iterables are not rewound (DALI semantics)

    def close(self) -> None:
        if self._source_thread is not None:
            self._source_thread.close()
        super().close()

    # -- checkpoints: callables are indexed by the pipeline's counters, so they resume by themselves;
    # an iterable's position cannot be saved: it restarts from its beginning (as in DALI), warned
    def _restarts(self) -> bool:
        if self._parallel is not None:
            return self._parallel.dedicated is not None
        return self.source is not None and self._caller._iterator is not None

    def get_state(self) -> dict | None:
        return {"restarts": True} if self._restarts() else None

    def unsaved_state_warning(self) -> str | None:
        # DALI's warning (its first sentence in its words): only a callable taking the iteration,
        # BatchInfo or SampleInfo resumes where a checkpoint was taken
        if self.source is None or (not self._restarts() and positional_arity(self.source) > 0):
            return None
        kind = ("SourceKind.GENERATOR_FUNC" if is_generator_function(self.source) else
                "SourceKind.ITERABLE" if not callable(self.source) else None)
        reason = f"with {kind} as a 'source'" if kind else "with parameterless callable as a 'source'"
        return (f"Checkpointing enabled in a pipeline with external source operator, {reason}. The state of such a "
                f"'source' is not captured ({self.label}): restored from a checkpoint, it starts again from its "
                "beginning unless adjusted by hand, which may put it out of step with the other sources.")

    def set_state(self, state: dict | None) -> None:
        from .._checkpoint import warn_restart
        if self._parallel is not None:
            if self._parallel.dedicated is None:  # batches computed ahead for the old position
                self._parallel._cancel()
                self._parallel.epoch = None
            elif state is not None:
                if self._parallel.fifo:
                    raise NotImplementedError(f"{self.label}: restoring a running pipeline whose parallel "
                                              "source is an iterable or generator (build a new pipeline with "
                                              "checkpoint=... instead)")
                warn_restart(self.label, "a parallel source that is an iterable or a generator")
            return
        if state is not None and self._restarts():
            warn_restart(self.label, "a source that is an iterable or a generator")
            a = self.args
            self._caller = SourceCaller(self.source, a["batch"], a["batch_info"], cycle_mode(a["cycle"]),
                                         a["num_outputs"])

    def run(self, ws):
        if ws.gpu is None:
            return ws.fed
        outs = []
        for tl in ws.fed:  # device='gpu': host batches are uploaded, device ones waited for
            if isinstance(tl, TensorListCPU):
                outs.append(ws.from_host(tl))
            else:
                if tl._event is not None:
                    ws.stream.wait_event(tl._event)
                outs.append(tl)
        return outs


def external_source(source: Any = None, num_outputs: int | None = None, *, cycle: Any = None,
                    name: str | None = None, device: str = "cpu", layout: Any = None, dtype: Any = None,
                    ndim: Any = None, cuda_stream: Any = None, use_copy_kernel: Any = None, blocking: Any = None,
                    batch: Any = True, repeat_last: bool = False, parallel: Any = None, no_copy: Any = None,
                    prefetch_queue_depth: Any = None, bytes_per_sample_hint: Any = None,
                    batch_info: Any = None, **kwargs: Any) -> Any:
    """Data from Python: see the module docstring."""
    if num_outputs is not None and source is None:
        raise ValueError("external_source: num_outputs needs a source")
    if num_outputs is not None and name is not None:
        raise ValueError("external_source: num_outputs cannot be combined with name")
    if repeat_last and source is not None:
        raise ValueError("external_source: repeat_last is for feed_input (push) mode and cannot be used with a source")
    if prefetch_queue_depth is not None and not parallel:
        raise ValueError("external_source: prefetch_queue_depth is only valid with parallel=True")
    if bytes_per_sample_hint is not None and not parallel:
        raise ValueError("external_source: bytes_per_sample_hint is only valid with parallel=True")
    _check_source(source, cycle, bool(batch))
    if parallel:
        check_parallel_source(f"external_source ('{name}')" if name else "external_source", source,
                               bool(batch), no_copy)
    args = {"num_outputs": num_outputs, "cycle": cycle, "name": name, "device": device, "layout": layout,
            "dtype": dtype, "ndim": ndim, "cuda_stream": cuda_stream, "use_copy_kernel": use_copy_kernel,
            "blocking": blocking, "batch": batch, "repeat_last": repeat_last, "parallel": parallel,
            "no_copy": no_copy, "prefetch_queue_depth": prefetch_queue_depth,
            "bytes_per_sample_hint": bytes_per_sample_hint, "batch_info": batch_info, **kwargs}
    out = call_op(EXTERNAL_SOURCE, (), args, py_object=source)
    return [out] if num_outputs == 1 else out  # num_outputs always gives a list, as in DALI


_RUNTIME_CONFLICTS = ("source", "layout", "dtype", "ndim", "cuda_stream", "use_copy_kernel")


class ExternalSourceOpsBase(OpsBase):
    """``ops.ExternalSource``: arguments may be split between construction and call."""

    def __init__(self, source: Any = None, num_outputs: int | None = None, *, device: str = "cpu", **kwargs: Any):
        self._device = device
        self._init = dict(kwargs, source=source, num_outputs=num_outputs)

    def __call__(self, *, source: Any = None, **kwargs: Any) -> Any:
        merged = {k: v for k, v in self._init.items() if v is not None}
        given = dict(source=source, **kwargs)
        for k, v in given.items():
            if v is None:
                continue
            if k in merged and k != "name":  # the call may name the operator anew
                # DALI's words and classes (RuntimeError for the data's description, ValueError for the rest)
                if k in _RUNTIME_CONFLICTS:
                    raise RuntimeError(f"``{k}`` already specified in constructor.")
                raise ValueError(f"The argument ``{k}`` already specified in constructor.")
            merged[k] = v
        if "batch" not in merged:
            merged["batch"] = not merged.get("parallel", False)
        return external_source(device=self._device, **merged)


EXTERNAL_SOURCE.fn_impl = external_source
EXTERNAL_SOURCE.ops_impl = ExternalSourceOpsBase
