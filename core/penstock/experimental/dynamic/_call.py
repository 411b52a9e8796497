"""Recording a call: its data as DataNodes, its graph built by the same functions a pipeline
definition uses, the resulting ``Invocation`` wrapped in Tensors or Batches, and when it runs
(``EvalMode``)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ... import _current, _hooks
from ...data_node import DataNode
from . import _batch, _tensor
from ._eval_context import EvalContext
from ._eval_mode import EvalMode
from ._invocation import Invocation
from ._convert import is_array


def batch_size_of(values: Sequence[Any], explicit: int | None = None) -> int | None:
    """The batch size a call works on: ``explicit`` (``batch_size=``), else that of its Batch
    arguments, which must agree; None for a call on single samples."""
    size = explicit
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError(f"batch_size must be a non-negative integer, got {size!r}")
    for v in values:
        if isinstance(v, _batch.Batch):
            if size is None:
                size = v.batch_size
            elif v.batch_size != size:
                raise ValueError(f"Inconsistent batch size: {v.batch_size} != {size}")
    return size


def as_data(value: Any) -> Any:
    """A Tensor or Batch as is; other array data as a Tensor; anything else None."""
    if isinstance(value, (_tensor.Tensor, _batch.Batch)):
        return value
    if is_array(value):
        return _tensor.as_tensor(value)
    return None


def node_for(data: Any, batch: int | None) -> DataNode:
    """The DataNode of a Tensor or Batch given to a call on ``batch`` samples (None: one sample):
    a Tensor given to a batch call is repeated for every sample."""
    if isinstance(data, _batch.Batch):
        if batch is None:
            raise ValueError("a Batch was given to a call on a single sample")
        if data.batch_size != batch:
            raise ValueError(f"Unexpected batch size: {data.batch_size} != {batch}")
        return data._node()
    if batch is not None:
        return _batch.Batch.broadcast(data, batch)._node()
    return data._node()


def record(build: Callable[..., Any], batch: int | None, external: bool = False,
           context: EvalContext | None = None) -> Any:
    """Records the graph ``build()`` makes as one call; returns its result(s) as Batches (``batch``
    samples) or Tensors, and starts it as the evaluation mode says."""
    context = context or EvalContext.current()
    with _current.eager(None):  # a debug-mode pipeline around the call must not run it
        outs = build()
    if outs is None:
        outs = []
    elif isinstance(outs, DataNode):
        outs = [outs]
    invocation = Invocation(list(outs), 1 if batch is None else batch, context)
    if any(op.device != "cpu" for op in invocation._ops):
        context._gpu()  # a GPU call fails here, not when read, on a machine without one
    cls = _tensor.Tensor if batch is None else _batch.Batch
    results = [cls._of_result(invocation, i) for i in range(len(outs))]  # held before it may run
    context._record(invocation)
    mode = EvalMode.current()
    if external or mode in (EvalMode.sync_cpu, EvalMode.sync_full):
        # data that is a view of the caller's memory is read before the caller can change it
        for r in results:
            r.evaluate()
        if mode is EvalMode.sync_full and context.cuda_stream is not None:
            context.cuda_stream.synchronize()
    elif mode is EvalMode.eager:
        context._schedule(invocation)
    return results


def apply(build: Callable[..., DataNode], *data: Any) -> Any:
    """One result of ``build(*values)``, where the Tensors and Batches among ``data`` are given as
    DataNodes and anything else as is (e.g. a transfer, an indexing, an arithmetic expression)."""
    batch = batch_size_of(data)
    nodes = [node_for(d, batch) if isinstance(d, (_tensor.Tensor, _batch.Batch)) else d for d in data]
    external = any(getattr(d, "_external", False) for d in data)
    return record(lambda: build(*nodes), batch, external)[0]


def operand(value: Any) -> Any:
    """An arithmetic operand: Tensors, Batches and arrays of other libraries become data; numpy
    arrays and scalars stay constants (as in a pipeline's expressions)."""
    import numpy as np
    if isinstance(value, (_tensor.Tensor, _batch.Batch)):
        return value
    if isinstance(value, (bool, int, float, np.ndarray, np.generic, list, tuple)) or value is None:
        return value
    if is_array(value):
        return _tensor.as_tensor(value)
    return value


def binary(op: str, a: Any, b: Any) -> Any:
    return apply(lambda x, y: _hooks.binary(op, x, y), operand(a), operand(b))


def unary(op: str, a: Any) -> Any:
    return apply(lambda x: _hooks.unary(op, x), a)
