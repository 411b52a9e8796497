"""``fn.external_source``: batches from Python (callables, iterables, generators, feed_input).

The source is called in the thread that schedules iterations (the caller of run()), ahead of
consumption by the prefetch depth, exactly like DALI; StopIteration ends the epoch.
"""
from __future__ import annotations

import collections
import functools
import inspect
from typing import Any

import numpy as np

from .._generate import OpsBase, call_op
from .._operator import Operator
from .._registry import ArgumentValueError, Arg, ArgType, OpSchema, register
from ..tensors import TensorCPU, TensorListCPU, TensorListGPU
from ..types import BatchInfo, DALIDataType, SampleInfo, to_dali_type

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
          Arg("batch_info", ArgType.BOOL, False, doc="call a batch source with BatchInfo instead of the iteration")],
    min_inputs=0, max_inputs=0, num_outputs=lambda a: a.get("num_outputs") or 1,
    devices=("cpu", "gpu"), is_source=True)

_NO_CYCLE = (None, False, "no")


def _cycle_mode(cycle: Any) -> str | None:
    if cycle in _NO_CYCLE:
        return None
    if cycle is True or cycle == "quiet":
        return "quiet"
    if cycle == "raise":
        return "raise"
    raise ValueError(f"external_source: cycle must be True, False, None, 'quiet', 'raise' or 'no', got {cycle!r}")


def _is_generator_function(obj: Any) -> bool:
    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.isgeneratorfunction(obj) or (
        callable(obj) and not inspect.isfunction(obj) and inspect.isgeneratorfunction(getattr(obj, "__call__", None)))


def _positional_arity(fn: Any) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    kinds = [p for p in sig.parameters.values()]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in kinds) or \
            any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in kinds):
        raise TypeError("external_source: the source callable must take no argument or exactly one "
                        "positional argument (no *args, **kwargs or keyword-only arguments)")
    required = [p for p in kinds if p.default is p.empty]
    if len(required) > 1:
        raise TypeError("external_source: the source callable takes more than one argument")
    takes_positional = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in kinds)
    return 1 if takes_positional else 0


def _check_source(source: Any, cycle: Any, batch: bool) -> None:
    mode = _cycle_mode(cycle)
    if source is None:
        return
    if _is_generator_function(source):
        return
    if callable(source):
        if mode is not None:
            raise ValueError("external_source: 'cycle' applies to iterables and generator functions, not callables")
        _positional_arity(source)
        return
    if inspect.isgenerator(source) and mode is not None:
        raise TypeError("external_source: a generator object cannot be cycled; pass the generator function")
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


def _to_batch(data: Any, layout: Any, dtype: Any, ndim: Any, label: str) -> Any:
    if isinstance(data, (TensorListCPU, TensorListGPU)):
        tl = data
    elif hasattr(data, "__cuda_array_interface__") or (
            isinstance(data, (list, tuple)) and data and hasattr(data[0], "__cuda_array_interface__")):
        raise RuntimeError(f"{label}: got GPU data but the GPU backend is not available")
    else:
        if isinstance(data, (list, tuple)):
            data = [d if isinstance(d, TensorCPU) else np.asarray(d if not hasattr(d, "__dlpack__") or
                                                                     isinstance(d, np.ndarray) else np.from_dlpack(d))
                    for d in data]
        tl = TensorListCPU(data)
    if dtype is not None and tl.dtype != to_dali_type(dtype):
        raise TypeError(f"{label}: the source gave {tl.dtype} but dtype={DALIDataType(to_dali_type(dtype))} was declared")
    if ndim is not None and tl.ndim() != ndim:
        raise ValueError(f"{label}: the source gave {tl.ndim()}-D samples but ndim={ndim} was declared")
    if layout:
        if len(layout) != tl.ndim():
            raise ArgumentValueError(f"{label}: layout '{layout}' cannot describe {tl.ndim()}-D samples")
        tl.set_layout(layout)
    return tl


@register(EXTERNAL_SOURCE)
class ExternalSourceCPU(Operator):
    def setup(self) -> None:
        a = self.args
        if a["parallel"]:
            raise NotImplementedError("external_source(parallel=True) is not supported by penstock yet")
        if a["no_copy"] is False and a["parallel"]:
            raise ValueError(f"{self.label}: no_copy=False cannot be used in parallel mode")
        if a["prefetch_queue_depth"] is not None:
            raise ValueError(f"{self.label}: prefetch_queue_depth is only valid with parallel=True")
        self.source = self.node.py_object
        self.k = a["num_outputs"] or 1
        self.multi = a["num_outputs"] is not None  # the source returns a tuple of outputs, even of one
        self.layouts = _per_output(a["layout"], self.k, "layout")
        self.dtypes = _per_output(a["dtype"], self.k, "dtype")
        self.ndims = _per_output(a["ndim"], self.k, "ndim")
        self.cycle = _cycle_mode(a["cycle"])
        self.fed: collections.deque = collections.deque()
        self.last_fed: Any = None
        if self.source is None and a["repeat_last"] is False and a["num_outputs"]:
            raise ValueError(f"{self.label}: num_outputs needs a source")
        self._iterator = None
        self._exhausted = False
        if self.source is not None and not callable(self.source):
            self._iterator = iter(self.source)  # taken once: an iterable yields one epoch unless cycled
        elif self.source is not None and _is_generator_function(self.source):
            self._iterator = self.source()
        self._arity = (_positional_arity(self.source)
                       if callable(self.source) and not _is_generator_function(self.source) else 0)

    # -- push mode
    def feed(self, data: Any, layout: Any = None) -> None:
        if self.source is not None:
            raise RuntimeError(f"{self.label}: feed_input cannot be used with an external_source that has a source")
        self.fed.append((data, layout))

    def queued(self) -> int:
        return len(self.fed)

    # -- pulling a batch
    def _next_from_iterator(self) -> Any:
        if self._exhausted and self.cycle is None:
            raise StopIteration
        try:
            return next(self._iterator)
        except StopIteration:
            if self.cycle is None:
                self._exhausted = True
                raise
            self._iterator = self.source() if _is_generator_function(self.source) else iter(self.source)
            if self.cycle == "raise":
                raise
            return next(self._iterator)

    def _call(self, epoch: int, iteration: int, batch_size: int) -> Any:
        a = self.args
        if a["batch"]:
            if self._iterator is not None:
                return self._next_from_iterator()
            if self._arity == 0:
                return self.source()
            return self.source(BatchInfo(iteration, epoch) if a["batch_info"] else iteration)
        samples = []
        for j in range(batch_size):
            if self._iterator is not None:  # per-sample mode: one next() per sample
                samples.append(self._next_from_iterator())
                continue
            info = SampleInfo(iteration * batch_size + j, j, iteration, epoch)
            samples.append(self.source(info) if self._arity else self.source())
        if self.multi:
            return tuple([s[o] for s in samples] for o in range(self.k))
        return samples

    def fetch(self, epoch: int, iteration: int, batch_size: int) -> list:
        if self.source is None:
            if self.fed:
                data, layout = self.fed.popleft()
                self.last_fed = (data, layout)
            elif self.args["repeat_last"] and self.last_fed is not None:
                data, layout = self.last_fed
            else:
                raise RuntimeError(f"{self.label}: no data was fed with feed_input() for this iteration")
            outputs = [data]
            layouts = [layout or self.layouts[0]]
        else:
            result = self._call(epoch, iteration, batch_size)
            if self.multi:
                if not isinstance(result, (tuple, list)) or len(result) != self.k:
                    raise RuntimeError(f"{self.label}: the source must return {self.k} outputs "
                                       f"(num_outputs={self.k})")
                outputs = list(result)
            else:
                outputs = [result]
            layouts = self.layouts
        return [_to_batch(d, lay, dt, nd, self.label)
                for d, lay, dt, nd in zip(outputs, layouts, self.dtypes, self.ndims)]

    def reset_epoch(self) -> None:
        pass  # counters live in the pipeline; iterables are not rewound (DALI semantics)

    def run(self, ws):
        return ws.fed


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
    args = {"num_outputs": num_outputs, "cycle": cycle, "name": name, "device": device, "layout": layout,
            "dtype": dtype, "ndim": ndim, "cuda_stream": cuda_stream, "use_copy_kernel": use_copy_kernel,
            "blocking": blocking, "batch": batch, "repeat_last": repeat_last, "parallel": parallel,
            "no_copy": no_copy, "prefetch_queue_depth": prefetch_queue_depth, "batch_info": batch_info, **kwargs}
    if device == "gpu":
        from .._registry import kernel_for
        kernel_for(EXTERNAL_SOURCE, "gpu")  # raises the clear "GPU backend not available" error
    out = call_op(EXTERNAL_SOURCE, (), args, py_object=source)
    return [out] if num_outputs == 1 else out  # num_outputs always gives a list, as in DALI


class ExternalSource(OpsBase):
    """``ops.ExternalSource``: arguments may be split between construction and call."""

    def __init__(self, source: Any = None, num_outputs: int | None = None, *, device: str = "cpu", **kwargs: Any):
        self._device = device
        self._init = dict(kwargs, source=source, num_outputs=num_outputs)

    def __call__(self, *, source: Any = None, **kwargs: Any) -> Any:
        merged = {k: v for k, v in self._init.items() if v is not None}
        given = dict(kwargs, source=source)
        for k, v in given.items():
            if v is None:
                continue
            if k in merged:
                raise ValueError(f"external_source: argument '{k}' given both at construction and at call")
            merged[k] = v
        if "batch" not in merged:
            merged["batch"] = not merged.get("parallel", False)
        return external_source(device=self._device, **merged)


EXTERNAL_SOURCE.fn_impl = external_source
EXTERNAL_SOURCE.ops_impl = ExternalSource
