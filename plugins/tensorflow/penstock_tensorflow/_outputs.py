"""Pipeline outputs as the arrays a ``DALIDataset`` yields: type checks and DALI's shape matching.

A dense batch is handed over as a numpy view of the pipeline's output buffer. TensorFlow wraps
a 64-byte aligned host array without copying it, and the engine's buffers are 64-byte aligned,
so a batch crosses into TensorFlow zero-copy; shape matching only reshapes (a view). A GPU
output of a dataset on the CPU (a tolerated device mismatch) is copied to the host first; a
dataset on a GPU takes tensors instead (_device), after the same checks (``checked_shape``).
Mismatches raise ValueError, which reaches the dataset's consumer as
``tf.errors.InvalidArgumentError`` (DALI's error type for them).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from penstock.tensors import TensorListGPU
from penstock.types import DALIDataType

TF_TYPES: dict[DALIDataType, tf.DType] = {
    DALIDataType.UINT8: tf.uint8, DALIDataType.UINT16: tf.uint16, DALIDataType.UINT32: tf.uint32,
    DALIDataType.UINT64: tf.uint64, DALIDataType.INT8: tf.int8, DALIDataType.INT16: tf.int16,
    DALIDataType.INT32: tf.int32, DALIDataType.INT64: tf.int64, DALIDataType.FLOAT16: tf.float16,
    DALIDataType.FLOAT: tf.float32, DALIDataType.FLOAT64: tf.float64, DALIDataType.BOOL: tf.bool,
}


def _fits(want: Sequence[int | None], have: Sequence[int]) -> list[tuple[int, ...]]:
    """One entry per way ``have`` fits ``want`` when unit dimensions of ``have`` may be skipped."""
    if not want:
        return [()] if all(e == 1 for e in have) else []
    if not have:
        return []
    ways = []
    if want[0] is None or want[0] == have[0]:
        ways += [(have[0],) + rest for rest in _fits(want[1:], have[1:])]
    if have[0] == 1:
        ways += _fits(want, have[1:])
    return ways


def match_shape(want: tf.TensorShape, have: tuple[int, ...], batch_size: int, index: int) -> tuple[int, ...]:
    """The shape a batch of shape ``have`` takes for the declared shape ``want`` of output ``index``.

    Declared shapes may leave out unit dimensions of the batch (e.g. a trailing 1 of labels, or
    the batch dimension itself when ``batch_size`` is 1); the match must be unambiguous.
    """
    if want.is_compatible_with(have):
        return have
    got = f"Expected (output_shapes[{index}]): {want}, got from the pipeline: {list(have)}."
    if want.rank >= len(have):
        raise ValueError(f"The shape provided for output `{index}` is not compatible with the shape "
                         f"returned by the pipeline. {got}")
    dims = want.as_list()
    if batch_size != 1:
        if have[0] != batch_size:
            raise ValueError(f"The shape returned by the pipeline for output `{index}` has a different "
                             f"batch size than DALIDataset's batch_size={batch_size}: {list(have)}.")
        if dims[0] is not None and dims[0] != batch_size:
            raise ValueError(f"The shape provided for output `{index}` is not compatible with DALIDataset's "
                             f"batch_size={batch_size}: {want}.")
    if math.prod(have) == 1 and want.is_fully_defined() and want.num_elements() == 1:
        return tuple(dims)
    ways = _fits(dims, have)
    if len(ways) != 1:
        raise ValueError(f"The shape provided for output `{index}` does not match the shape returned by the "
                         f"pipeline in exactly one way ({len(ways)} found). {got}")
    return ways[0]


def checked_shape(batch: Any, dtype: tf.DType, shape: tf.TensorShape, batch_size: int, index: int) -> tuple[int, ...]:
    """The shape output ``index`` takes in TensorFlow, after checking its type and that it is dense
    (on either device: only the batch's metadata is read)."""
    got = TF_TYPES.get(batch.dtype)
    if got != dtype:
        raise ValueError(f"The type provided for output `{index}` is not compatible with the type returned by "
                         f"the pipeline. Expected (output_dtypes[{index}]): {dtype.name}, got from the "
                         f"pipeline: {got.name if got is not None else batch.dtype}.")
    if not batch.is_dense_tensor():
        raise ValueError(f"Batch output at index `{index}` is not uniform: its samples have different shapes "
                         f"({batch.shape()[:4]}...), and TensorFlow needs one dense tensor per output. "
                         "Make every sample of a batch the same shape (e.g. crop, resize or pad).")
    have = (len(batch), *batch.shape()[0]) if len(batch) else (0,)
    return match_shape(shape, have, batch_size, index)


def check_arity(outputs: Sequence[Any], dtypes: Sequence[tf.DType]) -> None:
    if len(outputs) != len(dtypes):
        raise ValueError(f"The pipeline has {len(outputs)} outputs but {len(dtypes)} output_dtypes were given.")


def batch_arrays(outputs: Sequence[Any], dtypes: Sequence[tf.DType], shapes: Sequence[tf.TensorShape],
                 batch_size: int) -> tuple[np.ndarray, ...]:
    """One pipeline iteration's outputs as host arrays of the declared types and shapes (a dataset
    on the CPU). GPU outputs (allowed with ``fail_on_device_mismatch=False``) are copied to the host."""
    check_arity(outputs, dtypes)
    arrays = []
    for i, (batch, dtype, shape) in enumerate(zip(outputs, dtypes, shapes)):
        target = checked_shape(batch, dtype, shape, batch_size, i)
        if isinstance(batch, TensorListGPU):
            batch = batch.as_cpu()  # waits for the batch's producing work only, then copies
        arrays.append(batch.as_array().reshape(target))
    return tuple(arrays)
