"""What runs behind a ``DALIDataset``: one pipeline per dataset iterator, driven from Python.

As in DALI, the pipeline is serialized when the dataset is made and every iterator over the
dataset (each ``iter(ds)``, each epoch of ``ds.repeat()``) builds a fresh instance with the
dataset's ``batch_size``/``num_threads``/``device_id``/queue settings. Python ``source``
callables of external_source nodes cannot be serialized; they are set aside and given back to
each instance (``DALIDatasetWithInputs`` only). Inputs fed by name come from tf.data datasets,
read in the same Python generator, so each pipeline iteration is fed right before it is scheduled.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import tensorflow as tf

from penstock._graph import OpNode, collect
from penstock.pipeline import Pipeline
from penstock.pipeline._serialize import deserialize

from ._device import batch_tensors
from ._outputs import batch_arrays

_EXTERNAL_SOURCE = "ExternalSource"


def graph_nodes(pipe: Pipeline) -> list[OpNode]:
    """The operators the pipeline would run (outputs and preserved operators, pruned)."""
    pipe._define()
    preserved = [n for n in pipe._nodes if n.preserve] + pipe._sinks
    return collect(pipe._outputs, preserved)


def external_sources(pipe: Pipeline) -> tuple[list[OpNode], list[OpNode]]:
    """The pipeline's external_source nodes: (placeholders fed by name, nodes with a Python source)."""
    nodes = [n for n in graph_nodes(pipe) if n.schema.name == _EXTERNAL_SOURCE]
    return [n for n in nodes if n.py_object is None], [n for n in nodes if n.py_object is not None]


def serialize_pipeline(pipeline: Pipeline) -> bytes:
    """The pipeline's serialized form, as the TensorFlow plugin hands it over."""
    try:
        return pipeline.serialize()
    except RuntimeError as e:
        raise RuntimeError("Error during pipeline initialization. Note that some operators (e.g. Python "
                           "operators) cannot be used with the TensorFlow Dataset API and DALIIterator.") from e


@contextlib.contextmanager
def _sources_set_aside(nodes: Sequence[OpNode]):
    """Serialization skips Python objects: hide the sources of ``nodes`` meanwhile, yield them by name."""
    saved = {n: n.py_object for n in nodes}
    for n in nodes:
        n.py_object = None
    try:
        yield {n.name: obj for n, obj in saved.items()}
    finally:
        for n, obj in saved.items():
            n.py_object = obj


@dataclass
class PipelineSpec:
    """A serialized pipeline and the settings each dataset iterator instantiates it with."""
    serialized: bytes
    params: dict
    sources: dict = field(default_factory=dict)   # external_source name -> Python source

    @classmethod
    def of(cls, pipe: Pipeline, params: dict, with_sources: bool) -> "PipelineSpec":
        sourced = external_sources(pipe)[1] if with_sources else []
        with _sources_set_aside(sourced) as sources:
            return cls(serialize_pipeline(pipe), params, sources)

    def instantiate(self) -> Pipeline:
        # Depth 1: the driver keeps the requested number of iterations in flight itself, feeding
        # each one's inputs right before scheduling it.
        pipe = deserialize(self.serialized, Pipeline, dict(self.params, prefetch_queue_depth=1))
        for node in pipe._nodes:
            if node.name in self.sources:
                node.py_object = self.sources[node.name]
        pipe.build()
        return pipe


@dataclass
class InputFeed:
    """A tf.data dataset feeding the external_source ``name``: samples (batch=False) or batches."""
    name: str
    dataset: tf.data.Dataset
    layout: str | None
    batch: bool

    def batches(self, batch_size: int) -> Iterator[Any]:
        if self.batch:
            for value in self.dataset:
                yield value.numpy()
            return
        if self.dataset.element_spec.shape.is_fully_defined():  # uniform samples: batch them in tf.data
            for value in self.dataset.batch(batch_size, drop_remainder=True):
                yield value.numpy()
            return
        samples = []
        for value in self.dataset:  # samples may differ in shape: a list of arrays
            samples.append(value.numpy())
            if len(samples) == batch_size:
                yield samples
                samples = []


def run(spec: PipelineSpec, feeds: Sequence[InputFeed], dtypes: Sequence[tf.DType],
        shapes: Sequence[tf.TensorShape], batch_size: int, depth: int,
        on_gpu: bool = False) -> Iterator[tuple[Any, ...]]:
    """Batches of one dataset iterator, keeping ``depth`` pipeline iterations in flight: host
    arrays for a dataset on the CPU, tensors for one ``on_gpu`` (GPU outputs shared through
    DLPack, _device).

    Ends when an input dataset or a Python source ends (after the iterations in flight), never
    otherwise: readers stream forever.
    """
    pipe = spec.instantiate()
    readers = [(f, f.batches(batch_size)) for f in feeds]
    in_flight = 0

    def schedule() -> bool:
        fed = [(f, next(it, None)) for f, it in readers]
        if any(data is None for _, data in fed):
            return False
        for f, data in fed:
            pipe.feed_input(f.name, data, layout=f.layout)
        pipe.schedule_run()
        return True

    more = True
    try:
        while more and in_flight < depth:
            more = schedule()
            in_flight += more
        while in_flight:
            try:
                outputs = pipe.share_outputs()
            except StopIteration:  # a Python source ended
                return
            in_flight -= 1
            arrays = (batch_tensors if on_gpu else batch_arrays)(outputs, dtypes, shapes, batch_size)
            pipe.release_outputs()
            if more:  # before handing the batch over, so the pipeline works while TensorFlow does
                more = schedule()
                in_flight += more
            yield arrays
    finally:
        pipe._shutdown()
