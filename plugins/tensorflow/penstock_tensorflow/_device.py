"""A ``DALIDataset`` on a TensorFlow GPU: batches handed over as GPU tensors, zero-copy.

``from_generator`` hands over host arrays only (``numpy_function``). A dataset on a GPU is instead
a generator dataset created under ``tf.device('/GPU:k')`` (TensorFlow's generator and options
datasets have GPU kernels, as ``tf.data.experimental.copy_to_device`` uses): its ``next``
function calls ``tf.py_function`` on that GPU, whose Python body drives the pipeline and returns
``EagerTensor``s that TensorFlow passes on as they are when they already live on that GPU.

GPU outputs cross with ``tf.experimental.dlpack.from_dlpack``, which shares the batch's device
memory (flat, then reshaped by TensorFlow without a copy). TensorFlow's DLPack import takes no
stream, so it cannot be ordered after the pipeline's stream on the GPU: the host first waits for
the batch's own completion event (recorded when the pipeline finished that iteration; later
iterations keep running and, with the pipeline prefetching ahead, the wait is usually over at
once), never for the whole device. The batch is exported for the legacy default stream: when
TensorFlow drops the tensor, the pipeline's stream waits for all work queued so far on
TensorFlow's streams (blocking streams, which order with the legacy stream) before the memory is
reused. Should TensorFlow refuse the batch's memory, one device copy (CuPy, a fresh allocation)
is handed over instead. A dataset on another GPU than the pipeline's gets the batch through
DLPack and then one device-to-device copy (TensorFlow's); CPU outputs of a dataset on a GPU
(allowed with ``fail_on_device_mismatch=False``) one host-to-device copy.
"""
from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops, structured_function
from tensorflow.python.data.util import structure
from tensorflow.python.ops import gen_dataset_ops

from penstock.tensors import TensorListGPU

from ._outputs import check_arity, checked_shape

# The live generators of the dataset iterators, by id (as from_generator keeps its own).
_live: dict[int, Iterator[Any]] = {}
_ids = itertools.count()


def gpu_tensor(batch: TensorListGPU, shape: tuple[int, ...], index: int) -> tf.Tensor:
    """A GPU batch as a TensorFlow tensor of ``shape`` on the batch's GPU: zero-copy, else one
    device copy. The batch crosses flat (no strides for TensorFlow to reject) and is reshaped by
    TensorFlow, which only relabels the buffer."""
    batch._wait_on_host()  # TensorFlow's from_dlpack has no stream argument: this batch's event only
    flat = batch.as_reshaped_tensor((math.prod(shape),))
    if flat.data_ptr() != batch.data_ptr():  # samples not back to back: stacked on CuPy's current stream
        _current_stream().synchronize()
    try:
        tensor = tf.experimental.dlpack.from_dlpack(flat.__dlpack__(stream=1))
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as e:
        warnings.warn(f"DALIDataset: TensorFlow cannot take output `{index}` without a copy ({e.message}); "
                      "it is copied once on the GPU", stacklevel=2)
        import cupy  # the GPU backend's array library: there whenever a batch is on the GPU

        with cupy.cuda.Device(batch.device_id()):
            copy = cupy.from_dlpack(flat).copy()  # ordered after the pipeline's stream by DLPack
            _current_stream().synchronize()  # done before TensorFlow, whose stream we cannot see
        tensor = tf.experimental.dlpack.from_dlpack(copy.toDlpack())
    with tf.device(tensor.device):
        return tf.reshape(tensor, shape)


def _current_stream() -> Any:
    import cupy
    return cupy.cuda.get_current_stream()


def batch_tensors(outputs: Sequence[Any], dtypes: Sequence[tf.DType], shapes: Sequence[tf.TensorShape],
                  batch_size: int) -> tuple[tf.Tensor, ...]:
    """One pipeline iteration's outputs as tensors, for a dataset on a GPU: GPU outputs on their
    GPU (shared), host outputs on the host; the py_function copies to its GPU what is elsewhere
    (a CPU output, or the pipeline's GPU when the dataset is on another one)."""
    check_arity(outputs, dtypes)
    tensors = []
    for i, (batch, dtype, shape) in enumerate(zip(outputs, dtypes, shapes)):
        target = checked_shape(batch, dtype, shape, batch_size, i)
        if isinstance(batch, TensorListGPU):
            tensors.append(gpu_tensor(batch, target, i))
        else:
            with tf.device("/CPU:0"):
                tensors.append(tf.convert_to_tensor(batch.as_array().reshape(target)))
    return tuple(tensors)


def device_dataset(make: Callable[[], Iterator[Sequence[tf.Tensor]]], specs: Sequence[tf.TensorSpec],
                   device: str, single: bool = False) -> tf.data.Dataset:
    """A dataset on ``device`` whose every iterator runs a fresh ``make()`` generator of tensors.

    The generator's tensors are handed over as they are if they are on ``device``, else copied
    there (by ``tf.py_function``). Must be called within ``tf.device(device)``.
    """
    def init() -> tf.Tensor:
        def start() -> np.int64:
            key = next(_ids)
            _live[key] = make()
            return np.int64(key)
        with tf.device("/CPU:0"):
            return tf.numpy_function(start, [], tf.int64, stateful=True)

    def next_batch(key: tf.Tensor) -> tuple[tf.Tensor, ...]:
        def step(k: tf.Tensor) -> list[tf.Tensor]:
            return list(next(_live[int(k)]))  # StopIteration ends the dataset (OutOfRange)
        with tf.device(device):
            values = tf.py_function(step, [key], [s.dtype for s in specs])
        for value, spec in zip(values, specs):
            value.set_shape(spec.shape)
        return values[0] if single else tuple(values)  # single: elements are tensors, not 1-tuples

    def finalize(key: tf.Tensor) -> tf.Tensor:
        def stop(k: np.int64) -> np.int64:
            gen = _live.pop(int(k), None)
            if gen is not None:
                gen.close()  # shuts the pipeline down
            return np.int64(0)
        with tf.device("/CPU:0"):
            return tf.numpy_function(stop, [key], tf.int64, stateful=True)

    return _GeneratorDataset(init, next_batch, finalize, specs[0] if single else tuple(specs))


class _GeneratorDataset(dataset_ops.DatasetSource):
    """TensorFlow's generator dataset (from_generator's, and copy_to_device's on a GPU): an
    iterator runs ``init`` once, ``next_batch`` per element until OutOfRange, then ``finalize``.
    As in copy_to_device, ``next_batch`` keeps int32 results in device memory (TensorFlow's GPU
    kernels otherwise keep int32 tensors on the host)."""

    def __init__(self, init: Callable, next_batch: Callable, finalize: Callable, specs: tuple):
        name, self._name = "DALIDataset", None  # _name: the tf.data op's (optional) name
        self._init_func = structured_function.StructuredFunctionWrapper(
            init, name, input_structure=structure.type_spec_from_value(()))
        state = self._init_func.output_structure
        self._next_func = structured_function.StructuredFunctionWrapper(
            next_batch, name, input_structure=state, defun_kwargs={"experimental_ints_on_device": True})
        self._finalize_func = structured_function.StructuredFunctionWrapper(finalize, name, input_structure=state)
        self._specs = specs
        variant = gen_dataset_ops.generator_dataset(
            self._init_func.function.captured_inputs, self._next_func.function.captured_inputs,
            self._finalize_func.function.captured_inputs, init_func=self._init_func.function,
            next_func=self._next_func.function, finalize_func=self._finalize_func.function,
            **self._common_args)
        super().__init__(variant)

    @property
    def element_spec(self) -> tuple:
        return self._specs
