"""DALI Proxy: a pipeline's processing inside a PyTorch ``Dataset``/``DataLoader``.

The dataset calls ``server.proxy(...)`` (e.g. as its ``transform``) in the loader's worker
processes; the call only records its inputs and returns a ``DALIOutputSampleRef``. The loader's
collate function gathers a batch of those into a ``DALIOutputBatchRef``, and in the main process
``DataLoader`` feeds each batch of inputs to the pipeline's named ``external_source`` nodes and
replaces the reference by the pipeline's outputs (torch tensors). Pipeline runs overlap: up to
the pipeline's prefetch depth of batches are running while the loader collects the next ones.

    with DALIServer(pipe) as server:
        dataset = torchvision.datasets.ImageFolder(root, transform=server.proxy, loader=read_path)
        for images, labels in DataLoader(server, dataset, batch_size=64, num_workers=4):
            ...
"""
from __future__ import annotations

import collections
import inspect
import itertools
from typing import Any

import numpy as np
import torch.utils.data
from torch.utils.data._utils.collate import collate, default_collate_fn_map

from penstock_pytorch.tensors import to_torch


class DALIOutputSampleRef:
    """What the proxy returns for one sample: its inputs, waiting to be batched."""

    def __init__(self, proxy_id: int, inputs: tuple):
        self.proxy_id = proxy_id
        self.inputs = inputs


class DALIPipelineRunRef:
    """One pipeline run: the batch of inputs it is fed (``call_args``: input name -> per-sample
    values), identified by ``batch_id`` (the loader worker that collated it, and that worker's count
    of batches). The server schedules it (``is_scheduled``) and fills in its outputs
    (``is_complete``)."""

    def __init__(self, batch_id: tuple[int, int]):
        self.batch_id = batch_id
        self.call_args: dict[str, list] = {}
        self.is_scheduled = False
        self.is_complete = False
        self.ticket: int | None = None  # its place in the server's order of runs

    def __repr__(self) -> str:
        return (f"DALIPipelineRunRef(batch_id={self.batch_id}, inputs={list(self.call_args)}, "
                f"is_scheduled={self.is_scheduled}, is_complete={self.is_complete})")


class DALIOutputBatchRef:
    """A batch of proxy calls: the pipeline run that will produce its outputs."""

    def __init__(self, proxy_id: int, pipe_run_ref: DALIPipelineRunRef):
        self.proxy_id = proxy_id
        self.pipe_run_ref = pipe_run_ref

    @property
    def inputs(self) -> tuple:
        """Per pipeline input, the list of per-sample values."""
        return tuple(self.pipe_run_ref.call_args.values())

    def __len__(self) -> int:
        inputs = self.inputs
        return len(inputs[0]) if inputs else 0

    def __repr__(self) -> str:
        return f"DALIOutputBatchRef(pipe_run_ref={self.pipe_run_ref})"


class _DALIProxy:
    """The callable handed to the dataset; picklable, so it reaches worker processes."""

    def __init__(self, proxy_id: int, names: list[str]):
        self._id = proxy_id
        self._names = names
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])

    def __call__(self, *args: Any, **kwargs: Any) -> DALIOutputSampleRef:
        bound = self.__signature__.bind(*args, **kwargs)
        return DALIOutputSampleRef(self._id, tuple(bound.arguments[n] for n in self._names))

    def __getstate__(self) -> dict:
        return {"id": self._id, "names": self._names}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["id"], state["names"])


_collated = itertools.count()  # batches collated in this process


def _collate_sample_refs(batch: list, *, collate_fn_map: Any = None) -> DALIOutputBatchRef:
    ids = {ref.proxy_id for ref in batch}
    if len(ids) != 1:
        raise RuntimeError("a batch mixes samples of different DALI proxies")
    worker = torch.utils.data.get_worker_info()
    run = DALIPipelineRunRef((worker.id if worker is not None else -1, next(_collated)))
    run.call_args = {f"input_{i}": list(values) for i, values in enumerate(zip(*(ref.inputs for ref in batch)))}
    return DALIOutputBatchRef(ids.pop(), run)


_COLLATE_MAP = {**default_collate_fn_map, DALIOutputSampleRef: _collate_sample_refs}


def _collate(batch: list) -> Any:
    return collate(batch, collate_fn_map=_COLLATE_MAP)


def _as_sample(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, (str, bytes)):  # file names and raw bytes become 1-D uint8 samples
        return np.frombuffer(value.encode() if isinstance(value, str) else value, np.uint8)
    return np.asarray(value)


class DALIServer:
    """Runs ``pipeline`` on the batches of inputs a ``DataLoader`` collects through ``proxy``.

    The pipeline's inputs are its named ``external_source`` nodes without a ``source``; the proxy
    takes them, in definition order, as positional or keyword arguments. Batches run in the order
    the loader yields them (``deterministic`` is accepted for compatibility: the order is always
    deterministic here).
    """

    def __init__(self, pipeline: Any, deterministic: bool = False):
        self._pipe = pipeline
        self._pipe.build()
        self._names = [op.name for op in self._pipe._source_ops
                       if op.schema.name == "ExternalSource" and getattr(op, "source", None) is None]
        if not self._names:
            raise RuntimeError("DALIServer needs a pipeline with named external_source inputs (no source)")
        self._proxy = _DALIProxy(id(self), self._names)
        self._deterministic = deterministic
        self._in_flight: collections.deque = collections.deque()  # tickets of scheduled runs
        self._results: dict[int, Any] = {}
        self._next_ticket = 0
        self._running = False

    @property
    def proxy(self) -> _DALIProxy:
        return self._proxy

    # -- the server's run loop (the pipeline's executor runs the iterations in the background)
    def start_thread(self) -> None:
        self._running = True

    def stop_thread(self) -> None:
        """Waits for the runs still in flight and drops their results."""
        while self._in_flight:
            self._collect_one()
        self._results.clear()
        self._running = False

    def __enter__(self) -> "DALIServer":
        self.start_thread()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_thread()

    def _submit(self, ref: DALIOutputBatchRef) -> DALIPipelineRunRef:
        if ref.proxy_id != self._proxy._id:
            raise RuntimeError("the batch was produced by the proxy of another DALIServer")
        run = ref.pipe_run_ref
        run.call_args = dict(zip(self._names, ref.inputs))  # by the pipeline's input names
        for name, column in run.call_args.items():
            self._pipe.feed_input(name, [_as_sample(v) for v in column])
        if not self._pipe._schedule_one():
            raise RuntimeError("DALIServer: the pipeline did not accept the batch")
        run.ticket = self._next_ticket
        run.is_scheduled = True
        self._next_ticket += 1
        self._in_flight.append(run.ticket)
        return run

    def _collect_one(self) -> None:
        ticket = self._in_flight.popleft()
        outputs = self._pipe._pop_outputs()
        tensors = tuple(to_torch(o) for o in outputs)
        self._results[ticket] = tensors[0] if len(tensors) == 1 else tensors

    def _result(self, ticket: int) -> Any:
        while ticket not in self._results:
            self._collect_one()
        return self._results.pop(ticket)

    def _schedule(self, obj: Any) -> Any:
        """Starts a pipeline run for every batch reference in ``obj``; returns ``obj`` with them
        replaced by their runs."""
        if isinstance(obj, DALIOutputBatchRef):
            return self._submit(obj)
        return _map(obj, self._schedule)

    def _fill(self, obj: Any) -> Any:
        if isinstance(obj, DALIPipelineRunRef):
            outputs = self._result(obj.ticket)
            obj.is_complete = True
            return outputs
        return _map(obj, self._fill)

    def produce_data(self, obj: Any) -> Any:
        """``obj`` (a batch from the loader: tuple, list, dict ...) with every batch reference
        replaced by the pipeline's outputs for it."""
        if not self._running:
            raise RuntimeError("DALIServer is not running: use it as a context manager or call start_thread()")
        return self._fill(self._schedule(obj))


def _map(obj: Any, f: Any) -> Any:
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(f(x) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(f(x) for x in obj)
    if isinstance(obj, dict):
        return type(obj)((k, f(v)) for k, v in obj.items())
    return obj


class DataLoader(torch.utils.data.DataLoader):
    """``torch.utils.data.DataLoader`` whose batches come out with the proxy's references replaced
    by the pipeline outputs. Takes the DataLoader's arguments after the server."""

    def __init__(self, dali_server: DALIServer, *args: Any, **kwargs: Any):
        if kwargs.get("collate_fn") is None:
            kwargs["collate_fn"] = _collate
        super().__init__(*args, **kwargs)
        self.dali_server = dali_server

    def __iter__(self):
        server = self.dali_server
        if not server._running:
            raise RuntimeError("DALIServer is not running: use it as a context manager or call start_thread()")
        depth = max(server._pipe._cpu_queue_size, server._pipe._gpu_queue_size)
        pending: collections.deque = collections.deque()
        for batch in super().__iter__():
            pending.append(server._schedule(batch))  # runs while the loader collects the next batches
            if len(pending) > depth:
                yield server._fill(pending.popleft())
        while pending:
            yield server._fill(pending.popleft())
