"""Debug mode (``pipeline.experimental.pipeline_def(debug=True)``): the graph function runs eagerly.

Every ``run()`` calls the graph function again; each operator call executes at once on the
calling thread and returns a :class:`DataNodeDebug` holding its batch (``.get()``). Operator
instances persist between iterations, matched by call order, so readers, external sources and
random generators keep their state; the order of operator calls must not change.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _current, _engine
from .._operator import Operator, Workspace
from .._registry import kernel_for
from .._std_random import seed_seq
from ..data_node import DataNode
from ..tensors import TensorCPU, TensorListCPU
from ._build import check_size_and_threads
from ._graph_function import call_graph_function, outputs_tuple
from ._pipeline import Pipeline
from ._run import one_caller

class _Deferred:
    """The run of an operator that specializes for what reads its output (``Operator.link``: a
    decoder whose only reader is a downscaling resize decodes smaller, in the DCT domain), put off
    until its output is first read, so that it runs as the same graph runs in standard mode: fused
    when a resize reads it first (unless it was read again once, see ``unfused``), else not."""

    def __init__(self, pipe: "DebugPipeline", op: Any, ws: Workspace, call: int):
        self.pipe, self.op, self.ws, self.call = pipe, op, ws, call
        self.results: list | None = None
        self.fused = False

    def batch(self, index: int, reader: Any) -> TensorListCPU:
        """Output ``index`` for ``reader`` (the operator reading it; None: the user, an output)."""
        if self.results is not None and self.fused:
            # read again after it was decoded for the resize alone: standard mode would not have fused
            # it (two readers), so decode it whole, and never fuse this call again
            self.pipe._unfused.add(self.call)
            self.results = None
        if self.results is None:
            self.fused = reader is not None and self.call not in self.pipe._unfused
            self.op.link([[reader if self.fused else None] for _ in self.op.node.outputs])
            self.results = self.pipe._run(self.op, self.ws)
        return self.results[index]


class DataNodeDebug(DataNode):
    """An operator's output in debug mode: a DataNode that also holds this iteration's data."""

    def __init__(self, data: TensorListCPU | None, name: str, source: Any = None, index: int = 0,
                 deferred: _Deferred | None = None):
        super().__init__(name, "cpu", source, index)
        self._data = data
        self._deferred = deferred  # computes the data when first read (data None till then)

    def get(self) -> TensorListCPU:
        """The batch this node holds in the current iteration."""
        return self._read(None)

    def _read(self, reader: Any) -> TensorListCPU:
        if self._data is not None:
            return self._data
        batch = self._deferred.batch(self.index, reader)
        if not self._deferred.fused:  # a batch decoded for a resize alone is that resize's only
            self._data = batch
        return batch

    def __str__(self) -> str:
        data = self.get()
        samples = ",\n".join("    " + np.array2string(data.at(i), prefix="    ") for i in range(len(data)))
        return (f"DataNodeDebug(name={self.name!r}, dtype={data.dtype.name}, layout={data._layout!r}, "
                f"data=[\n{samples}])")

    __repr__ = __str__


def _is_torch_tensor(value: Any) -> bool:
    return hasattr(value, "detach") and hasattr(value, "cpu")


def _host_array(value: Any) -> Any:
    return value.detach().cpu().numpy() if _is_torch_tensor(value) else np.asarray(value)


def _as_batch(value: Any, label: str) -> TensorListCPU:
    """A debug-mode operator input given as data: a TensorList, a list of arrays/tensors (one per
    sample) or an array/tensor whose samples lie along its first axis (as DALI takes them)."""
    if isinstance(value, DataNodeDebug):
        return value.get()
    if isinstance(value, TensorListCPU):
        return value
    if isinstance(value, (list, tuple)):
        return TensorListCPU([v if isinstance(v, TensorCPU) else _host_array(v) for v in value])
    if is_batch_array(value):
        return TensorListCPU(np.ascontiguousarray(_host_array(value)))
    raise TypeError(f"{label}: debug-mode data must be a DataNode, a TensorList, a list of arrays (one per "
                    f"sample) or an array of samples along its first axis; got {type(value).__name__}")


def is_batch_array(value: Any) -> bool:
    """Whether an operator's positional input is an array (or tensor) of samples along its first
    axis: a batch in debug mode, split as DALI splits it (a 0-d one is a constant)."""
    return (isinstance(value, np.ndarray) or _is_torch_tensor(value)) and value.ndim >= 1


def is_data(value: Any) -> bool:
    """Whether a debug-mode operator argument is a batch of data (a TensorList or a list of
    arrays/tensors), not a constant."""
    return isinstance(value, TensorListCPU) or (isinstance(value, list) and bool(value) and all(
        isinstance(v, (np.ndarray, TensorCPU)) or _is_torch_tensor(v) for v in value))


class DebugPipeline(Pipeline):
    """A pipeline whose graph function runs eagerly every iteration."""

    def __init__(self, func: Callable, args: tuple, kwargs: dict, conditionals: bool, **ctor: Any):
        if ctor.get("enable_checkpointing") or ctor.get("checkpoint") is not None:
            raise NotImplementedError("penstock does not support checkpointing in debug mode "
                                      "(enable_checkpointing / checkpoint with debug=True)")
        super().__init__(**ctor)
        self._func, self._fargs, self._fkwargs = func, args, kwargs
        self._conditionals = conditionals
        self._kernels: list[tuple[Any, Any, str]] = []  # (schema, operator, args key) by call order
        self._unfused: set[int] = set()  # calls whose output a resize and another reader read (_Deferred)
        self._early_feeds: dict[str, list] = {}  # feed_input before the named external source exists
        self._first_calls: list[tuple] = []  # the first iteration's operator calls (_check_call)
        self._op_calls = 0
        # the random operators' seeds: standard mode's (penstock.pipeline._build), handed out in call order
        self._seeds = seed_seq([self._effective_seed & 0xFFFFFFFF], 1024)
        self._calls = 0
        self._random_calls = 0
        self._iter_batch: int | None = None

    def _register_node(self, node: Any) -> None:
        """Debug nodes are not kept: the graph is re-created every iteration."""

    is_data = staticmethod(is_data)  # fn/ops calls ask it: a list of arrays is one batch, not input sets

    # -- the pipeline API
    def build(self) -> None:
        if self._built:
            return
        check_size_and_threads(self._max_batch_size, self._num_threads)
        self._pool = _engine.ThreadPool(self._num_threads, "penstock-work")
        self._built = True

    @one_caller
    def schedule_run(self) -> None:
        self.build()
        if self._last_iter:
            return
        try:
            results: tuple | Exception = self._run_iteration()
        except StopIteration:
            self._last_iter = True
            return
        except Exception as exc:  # noqa: BLE001 - this iteration's failure, raised at its outputs
            results = exc
            self._iteration += 1
            self._iter_in_epoch += 1
        self._pending.append(results)

    def _pop_outputs(self) -> tuple:
        if not self._pending:
            raise StopIteration
        results = self._pending.popleft()
        if isinstance(results, Exception):
            raise results
        self._check_outputs(results)
        return results

    def feed_input(self, data_node: Any, data: Any, layout: str | None = None, cuda_stream: Any = None,
                   use_copy_kernel: bool = False) -> None:
        """As in standard mode; data fed before the graph function first ran (so before the
        external source exists) waits for it."""
        name = data_node.source.name if isinstance(data_node, DataNode) else str(data_node)
        op = next((op for _, op, _ in self._kernels if op.name == name), None)
        if op is None:
            self._early_feeds.setdefault(name, []).append((data, layout, cuda_stream, use_copy_kernel))
            return
        if not hasattr(op, "feed"):
            raise RuntimeError(f"feed_input: '{name}' is not an external_source")
        op.feed(data, layout, cuda_stream, use_copy_kernel)

    @one_caller
    def reset(self) -> None:
        if self._last_iter:
            self._last_iter = False
            self._epoch += 1
            self._iter_in_epoch = 0
            for _, op, _ in self._kernels:
                if op.schema.is_source:
                    op.reset_epoch()

    def _run_iteration(self) -> tuple:
        self._calls = self._random_calls = self._op_calls = 0
        self._iter_batch = None
        with self, _current.eager(self):
            result = call_graph_function(self._func, self._fargs, self._fkwargs, self._conditionals)
        if self._kernels and self._calls != len(self._kernels):
            raise RuntimeError(f"debug mode: this iteration called {self._calls} operators, the first one "
                               f"{len(self._kernels)}; the operators must be the same every iteration")
        outs = []
        for i, o in enumerate(outputs_tuple(result)):
            outs.append(o.get() if isinstance(o, DataNodeDebug) else _as_batch(o, f"pipeline output {i}"))
        self._iteration += 1
        self._iter_in_epoch += 1
        return tuple(outs)

    # -- eager operator calls (from _graph.make_op)
    def run_op(self, schema: Any, inputs: tuple, kwargs: dict, default_device: str | None, py_object: Any) -> list:
        from .._graph import make_op
        label = schema.fn_name
        self._check_call(schema, inputs, kwargs)
        inputs = tuple(self._debug_node(x, label) if is_data(x) or is_batch_array(x) else
                       _host_array(x) if _is_torch_tensor(x) else x for x in inputs)
        kwargs = {k: self._debug_node(v, f"{label} argument '{k}'") if is_data(v) and k != "source" else v
                  for k, v in kwargs.items()}
        with _current.eager(None):  # the call's node is built as in a graph, then run here
            outs = make_op(schema, inputs, kwargs, default_device=default_device, py_object=py_object)
        if not outs:
            return outs
        call = self._calls
        op, ws = self._prepare(outs[0].source)
        if type(op).link is not Operator.link:  # it specializes for its readers: run when first read
            later = _Deferred(self, op, ws, call)
            return [DataNodeDebug(None, d.name, d.source, d.index, later) for d in outs]
        results = self._run(op, ws)
        return [DataNodeDebug(tl, d.name, d.source, d.index) for tl, d in zip(results, outs)]

    def _check_call(self, schema: Any, inputs: tuple, kwargs: dict) -> None:
        """The operator calls of every iteration must be those of the first: the same operators in
        the same order, with as many inputs and keyword arguments, each a batch or a constant as
        before (DALI's rules and words)."""
        call = (schema, [is_data(x) or is_batch_array(x) or isinstance(x, DataNode) for x in inputs],
                {k: is_data(v) or isinstance(v, DataNode) for k, v in kwargs.items() if k not in ("name", "device")})
        k = self._op_calls
        self._op_calls += 1
        if k == len(self._first_calls):
            self._first_calls.append(call)
            return
        (first, batches, arg_batches), name = self._first_calls[k], schema.fn_name
        if first is not schema:
            raise RuntimeError(f"Unexpected operator '{name}'. Debug mode does not support changing the order of "
                               f"operators executed within the pipeline. (Call {k} was '{first.fn_name}'.)")
        for what, before, now in (("inputs", batches, call[1]), ("keyword arguments", arg_batches, call[2])):
            if len(before) != len(now):
                raise RuntimeError(f"Trying to use operator '{name}' with different number of {what} than when it "
                                   f"was built. Expected: {len(before)} {what}, got {len(now)}.")
        changed = [(f"Input {i}", was, is_) for i, (was, is_) in enumerate(zip(batches, call[1])) if was != is_] + [
            (f"Argument {key}", arg_batches.get(key), is_) for key, is_ in call[2].items() if arg_batches.get(key) != is_]
        for where, was, is_ in changed:
            kind = {True: "batch", False: "constant", None: "not given"}
            raise RuntimeError(f"{where} for operator '{name}' is a {kind[is_]} but was a {kind[was]} when created.")

    def _value(self, node: DataNode, reader: Any = None) -> TensorListCPU:
        if isinstance(node, DataNodeDebug):
            return node._read(reader)
        return self._run(*self._prepare(node.source))[node.index]  # a constant promoted while building the call

    def _prepare(self, node: Any) -> tuple[Any, Workspace]:
        """The call's operator and what it reads (its inputs read now, in call order)."""
        op = self._kernel(node)
        tls = [self._value(d, op) for d in node.inputs]
        args = {k: self._value(d) for k, d in node.arg_inputs.items()}
        fed = None
        if node.schema.is_source:
            fed = op.fetch(self._epoch, self._iter_in_epoch, self._max_batch_size)
            self._iter_batch = len(fed[0] if isinstance(fed, (list, tuple)) else fed)
        batch = len(tls[0]) if tls else len(next(iter(args.values()))) if args else (
            self._iter_batch or self._max_batch_size)
        return op, Workspace(tls, args, batch, self._iteration, self._epoch, self._pool, fed, op)

    def _run(self, op: Any, ws: Workspace) -> list:
        if ws.batch_size == 0 and op.node.batch_ref is not None:  # a conditional branch no sample reached
            return [TensorListCPU([]) for _ in op.node.outputs]
        results = op.run(ws)
        tls = ws.inputs
        for out in results:
            if tls and len(out) == len(tls[0]) and not any(out._source_info):
                out._source_info = tls[0]._source_info
        return results

    def _debug_node(self, value: Any, label: str) -> DataNodeDebug:
        batch = _as_batch(value, label)
        if len(batch) > self._max_batch_size:
            raise RuntimeError(f"{label}: a batch of {len(batch)} samples was given, more than max_batch_size "
                               f"{self._max_batch_size} (Expected batch size lower or equal to max batch size.)")
        return DataNodeDebug(batch, f"{label} input")

    def _kernel(self, node: Any) -> Any:
        """The operator instance of this call (created at the first iteration)."""
        k = self._calls
        self._calls += 1
        if node.schema.is_random:
            explicit = node.args.get("seed", -1)
            if explicit is None or explicit < 0:
                node.resolved_seed = int(self._seeds[self._random_calls % len(self._seeds)])
            self._random_calls += 1
        key = repr(sorted((a, v) for a, v in node.args.items() if a != "name"))
        if k < len(self._kernels):
            schema, op, old_key = self._kernels[k]
            if schema is not node.schema:
                raise RuntimeError(f"Unexpected operator '{node.schema.fn_name}'. Debug mode does not support "
                                   "changing the order of operators executed within the pipeline.")
            if old_key == key:
                op.node = node
                return op
        op = kernel_for(node.schema, node.device)(node, self)
        op.setup()
        for feed in self._early_feeds.pop(op.name, ()):
            op.feed(*feed)
        if k < len(self._kernels):
            self._kernels[k] = (node.schema, op, key)
        else:
            self._kernels.append((node.schema, op, key))
        return op


def debug_pipeline(func: Callable, args: tuple, kwargs: dict, ctor: dict, conditionals: bool) -> DebugPipeline:
    return DebugPipeline(func, args, kwargs, conditionals, **ctor)
