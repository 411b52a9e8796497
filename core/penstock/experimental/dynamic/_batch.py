"""``Batch``: many samples of the same type and rank (shapes may differ), and ``batch()`` /
``as_batch()`` to make one."""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from ... import _hooks
from ...tensors import TensorListCPU, TensorListGPU
from . import _call, _tensor
from ._convert import array_of, leading_dim, on_gpu, stacked, to_device
from ._data import Data
from ._device import device as as_device
from ._type import dtype as as_dtype

__all__ = ["Batch", "batch", "as_batch"]


class Batch(Data):
    """A batch of samples on the CPU or a GPU: what operators return for calls on batches.

    Made from a list of samples (Tensors, arrays, nested lists), from one array whose first
    dimension indexes the samples, or returned by operators; computed when its values or
    metadata are needed (see ``EvalMode``). ``tensors[i]`` / ``select(i)`` give sample i;
    ``slice[...]`` indexes every sample.
    """

    def __init__(self, tensors: Any = None, dtype: Any = None, device: Any = None, layout: str | None = None,
                 copy: bool = False):
        if tensors is None:
            raise ValueError("a Batch needs its samples")
        storage, external = _storage_of(tensors, dtype, device, layout, copy)
        self._set_storage(storage, external)

    @staticmethod
    def broadcast(sample: Any, batch_size: int, device: Any = None, dtype: Any = None) -> "Batch":
        """A batch of ``batch_size`` copies of one sample."""
        t = _tensor.as_tensor(sample, dtype=dtype, device=device)
        storage = t._value()
        arr = storage._sample_array(0)
        if isinstance(storage, TensorListGPU):
            import cupy as cp
            many = cp.ascontiguousarray(cp.broadcast_to(arr, (batch_size,) + arr.shape))
            return Batch._wrap(TensorListGPU(many, storage._layout, storage.device_id(), storage.stream))
        many = np.ascontiguousarray(np.broadcast_to(arr, (batch_size,) + arr.shape))
        return Batch._wrap(TensorListCPU(many, storage._layout))

    # -- metadata
    @property
    def batch_size(self) -> int:
        if self._storage is None and self._invocation is not None:
            return self._invocation.batch_size
        return len(self._value())

    @property
    def shape(self) -> list[tuple[int, ...]]:
        return self._value().shape()

    @property
    def ndim(self) -> int:
        return self._value().ndim()

    # -- samples
    @property
    def tensors(self) -> "SampleList":
        """The samples, as Tensors: ``b.tensors[i]``, ``b.tensors[1:3]``, ``len(b.tensors)``."""
        return SampleList(self, range(self.batch_size))

    def select(self, sample_range: Any) -> Any:
        """Sample ``i`` as a Tensor for an int; a Batch of the samples a slice or list picks."""
        if isinstance(sample_range, (int, np.integer)):
            return self.tensors[int(sample_range)]
        return self.tensors[sample_range].as_batch()

    def __iter__(self) -> Iterator[_tensor.Tensor]:
        return iter(self.tensors)

    @property
    def slice(self) -> "BatchSlicer":
        """Indexes every sample alike: ``b.slice[1:, ::2]`` is a Batch of each sample's elements."""
        return BatchSlicer(self)

    # -- data exchange
    def torch(self, copy: bool | None = None, pad: bool = False) -> Any:
        """The batch as one torch tensor (samples along the first dimension; with ``pad``, samples of
        different shapes are padded with zeros to the largest)."""
        try:
            import torch
        except ImportError:
            raise RuntimeError("Batch.torch() needs PyTorch") from None
        out = torch.from_dlpack(stacked_tensor(self, None, None, None, pad, copy=bool(copy)))
        return out

    def __repr__(self) -> str:
        storage = self._value()
        samples = [_tensor._host(storage._sample_array(i)) for i in range(len(storage))]
        if samples and all(s.shape == samples[0].shape for s in samples):
            body = np.array2string(np.stack(samples), separator=" ", prefix="    ")
        else:
            body = "[" + ",\n\n    ".join(np.array2string(s, prefix="     ") for s in samples) + "]"
        return _tensor._describe("Batch", body, self, [f"num_samples={len(storage)}", f"shape={storage.shape()}"])


class SampleList:
    """The samples of a Batch (or some of them) as Tensors."""

    def __init__(self, batch: Batch, indices: Sequence[int]):
        self._batch, self._indices = batch, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, selection: Any) -> Any:
        if isinstance(selection, (int, np.integer)):
            return _tensor.Tensor(batch=self._batch, index_in_batch=self._indices[int(selection)])
        if isinstance(selection, slice):
            return SampleList(self._batch, self._indices[selection])
        return SampleList(self._batch, [self._indices[int(i)] for i in selection])

    def __iter__(self) -> Iterator[_tensor.Tensor]:
        return (self[i] for i in range(len(self)))

    def select(self, selection: Any) -> Any:
        return self[selection]

    def tolist(self) -> list:
        return list(self)

    def as_batch(self, copy: bool = False) -> Batch:
        """These samples as a Batch (a copy, unless they are all of the batch, in order)."""
        if not copy and list(self._indices) == list(range(self._batch.batch_size)):
            return self._batch
        storage = self._batch._value()
        if not self._indices:
            return Batch._wrap(TensorListCPU(np.zeros((0,), storage._buf.dtype)))
        samples = [storage._sample_array(i) for i in self._indices]
        out = stacked(samples, isinstance(storage, TensorListGPU), storage._layout)
        out._source_info = [storage._source_info[i] for i in self._indices]
        return Batch._wrap(out)


class BatchSlicer:
    def __init__(self, batch: Batch):
        self._batch = batch

    def __getitem__(self, index: Any) -> Batch:
        index = _tensor.expand_ellipsis(index, self._batch)
        return _call.apply(lambda node: _hooks.subscript(node, index), self._batch)


def _storage_of(tensors: Any, dtype: Any, device: Any, layout: str | None, copy: bool) -> tuple[Any, bool]:
    """(a penstock batch of ``tensors``, whether it is a view of the caller's memory)."""
    want = as_dtype(dtype) if dtype is not None else None
    target = as_device(device) if device is not None else None
    if isinstance(tensors, Batch):
        storage, external = tensors._value(), tensors._external
    elif isinstance(tensors, (TensorListCPU, TensorListGPU)):
        storage, external = tensors, True
    elif isinstance(tensors, _tensor.Tensor):  # its first dimension indexes the samples
        t = tensors._value()
        storage, external = leading_dim(t._sample_array(0), isinstance(t, TensorListGPU), ""), tensors._external
    elif isinstance(tensors, (list, tuple)):
        storage, external = _packed(tensors, want, target), False
    else:
        arr, gpu, shares = array_of(tensors)
        storage, external = leading_dim(arr, gpu, ""), shares
    if copy and external:
        storage, external = _copied(storage), False
    if target is not None and (target.device_type == "gpu") != isinstance(storage, TensorListGPU):
        storage, external = Batch._wrap(storage).to_device(target)._value(), False
    if want is not None and want.type_id != storage.dtype:
        storage, external = _tensor.cast_storage(storage, want), False
    if layout is not None:
        if storage is getattr(tensors, "_storage", None) or external:
            storage = _relabeled(storage)
        storage.set_layout(layout)
    return storage, external


def _packed(samples: Sequence[Any], want: Any, target: Any) -> Any:
    if not samples:
        if want is None:
            raise ValueError("Element type must be specified if the list is empty")
        return TensorListCPU(np.zeros((0,), want.numpy_type()))  # no samples, of the asked type
    arrays, on = [], []
    for s in samples:
        if isinstance(s, Batch):
            raise TypeError("A list of Batch objects is not a valid argument type: a Batch is many samples")
        if isinstance(s, _tensor.Tensor):
            arrays.append(s._array())
            on.append(s.device.device_type == "gpu")
        else:
            arr, gpu, _ = array_of(s)
            if want is not None and not gpu and not isinstance(s, np.ndarray) and not on_gpu(s) \
                    and not hasattr(s, "__array__"):
                arr = np.asarray(s, dtype=want.numpy_type())  # Python data: typed as asked
            arrays.append(arr)
            on.append(gpu)
    gpu = any(on) if target is None else target.device_type == "gpu"
    return stacked([to_device(a, g, gpu) for a, g in zip(arrays, on)], gpu, "")


def _copied(storage: Any) -> Any:
    if isinstance(storage, TensorListGPU):
        out = TensorListGPU([storage._sample_array(i).copy() for i in range(len(storage))], storage._layout)
    else:
        out = TensorListCPU([storage._sample_array(i) for i in range(len(storage))], storage._layout)
    out._source_info = list(storage._source_info)
    return out


def _relabeled(storage: Any) -> Any:
    """The same samples under a new batch object (so a layout set on it changes no one else's)."""
    out = type(storage)._from_packed(storage._buf, storage._shapes, storage._offsets, storage._layout,
                                     storage._source_info)
    if isinstance(storage, TensorListGPU):
        out.stream, out._event = storage.stream, storage._event
    return out


def stacked_tensor(b: Batch, dtype: Any, device: Any, layout: str | None, pad: bool, copy: bool) -> _tensor.Tensor:
    """A Batch as one Tensor: samples along a new first dimension (padded with zeros with ``pad``)."""
    storage = b._value()
    shapes = storage.shape()
    if not storage.is_dense_tensor():
        if not pad:
            raise ValueError(f"the samples of this batch have different shapes ({shapes[:4]}...); "
                             "only uniform batches form one tensor (pass pad=True to pad them)")
        gpu = isinstance(storage, TensorListGPU)
        xp = __import__("cupy") if gpu else np
        big = tuple(int(e) for e in np.max(np.array(shapes, np.int64).reshape(len(shapes), -1), axis=0))
        out = xp.zeros((len(shapes),) + big, storage._buf.dtype)
        for i, s in enumerate(shapes):
            out[(i,) + tuple(slice(0, e) for e in s)] = storage._sample_array(i)
        dense, shares = out, False
    else:
        dense = storage._dense_array() if isinstance(storage, TensorListGPU) else storage.as_array()
        shares = True
    lay = layout if layout is not None else ("N" + storage._layout if storage._layout else None)
    t = _tensor.Tensor(dense, dtype, device, lay, copy=copy and shares)
    t._external = t._external and b._external
    return t


def batch(tensors: Any, dtype: Any = None, device: Any = None, layout: str | None = None) -> Batch:
    """A Batch holding a copy of ``tensors`` (a list of samples, or an array whose first dimension
    indexes them)."""
    return Batch(tensors, dtype, device, layout, copy=True)


def as_batch(tensors: Any, dtype: Any = None, device: Any = None, layout: str | None = None) -> Batch:
    """``tensors`` as a Batch, sharing memory where it can (a Batch is returned as is)."""
    if isinstance(tensors, Batch) and dtype is None and device is None and layout is None:
        return tensors
    return Batch(tensors, dtype, device, layout)
