"""The legacy TF op interface (``DALIIterator``/``DALIRawIterator``) on top of ``DALIDataset``.

Each call with the same pipeline and settings returns the next batch as a list of tensors: in
graph mode the returned tensors advance on every session run (a one-shot iterator); eagerly,
one iterator per (pipeline, settings) is kept, like TensorFlow's cached op kernels.
"""
from __future__ import annotations

import atexit
from typing import Any, Callable, Sequence

import tensorflow as tf

from penstock.pipeline import Pipeline
from penstock.pipeline._serialize import deserialize

from ._source import serialize_pipeline
from .dataset import DALIDataset

_eager_iterators: dict[tuple, Any] = {}
atexit.register(_eager_iterators.clear)  # finalize them while Python can still run their generators


def DALIIteratorWrapper(pipeline: Pipeline | None = None, serialized_pipeline: bytes | None = None,
                        sparse: Sequence[bool] = (), shapes: Sequence[Any] = (), dtypes: Sequence[tf.DType] = (),
                        batch_size: int = -1, prefetch_queue_depth: Any = 2, exec_dynamic: bool | None = None,
                        **kwargs: Any) -> list[tf.Tensor]:
    """The next batch of the pipeline (or of ``serialized_pipeline``) as a list of tensors."""
    if any(sparse):
        raise NotImplementedError("DALIIterator: sparse outputs (tf.SparseTensor) are not supported by penstock")
    if (not shapes) and batch_size == -1:
        raise ValueError("shapes and batch_size arguments cannot be empty, please provide at least one shape "
                         "argument element with the BATCH size or set batch_size")
    if batch_size == -1:
        batch_size = int(tf.TensorShape(shapes[0])[0])
    if serialized_pipeline is None:
        serialized_pipeline = serialize_pipeline(pipeline)
    pipe = deserialize(serialized_pipeline, Pipeline, {})
    if isinstance(prefetch_queue_depth, dict):
        kwargs.update(exec_separated=True, cpu_prefetch_queue_depth=prefetch_queue_depth["cpu_size"],
                      gpu_prefetch_queue_depth=prefetch_queue_depth["gpu_size"])
    else:
        kwargs.update(prefetch_queue_depth=prefetch_queue_depth)
    output_shapes = tuple(shapes) if shapes else None
    make = lambda: DALIDataset(pipe, tuple(dtypes), output_shapes, batch_size=batch_size,  # noqa: E731
                               exec_dynamic=bool(exec_dynamic), **kwargs)
    if not tf.executing_eagerly():
        return list(tf.compat.v1.data.make_one_shot_iterator(make()).get_next())
    key = (serialized_pipeline, tuple(dtypes), repr(output_shapes), batch_size, repr(sorted(kwargs.items())))
    if key not in _eager_iterators:
        _eager_iterators[key] = iter(make())
    return list(next(_eager_iterators[key]))


def DALIIterator() -> Callable[..., list[tf.Tensor]]:
    return DALIIteratorWrapper


def DALIRawIterator() -> Callable[..., list[tf.Tensor]]:
    """The raw op: like ``DALIIteratorWrapper`` but takes only ``serialized_pipeline``."""
    def dali(serialized_pipeline: bytes, **kwargs: Any) -> list[tf.Tensor]:
        return DALIIteratorWrapper(serialized_pipeline=serialized_pipeline, **kwargs)
    return dali
