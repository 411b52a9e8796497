"""``Tensor``: one sample of the dynamic mode, and ``tensor()`` / ``as_tensor()`` to make one."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _hooks
from ...data_node import newaxis
from ...tensors import TensorListCPU, TensorListGPU
from . import _batch, _call
from ._convert import array_of, single, to_device
from ._data import Data
from ._device import device as as_device
from ._type import DType, dtype as as_dtype

__all__ = ["Tensor", "tensor", "as_tensor"]


class Tensor(Data):
    """One sample (a multi-dimensional array) on the CPU or a GPU.

    Made from numpy, torch, CuPy, JAX arrays (anything with the array interfaces or DLPack),
    Python numbers and nested lists, or returned by operators for calls on single samples. The
    result of an operator is computed when its values or metadata are needed (see ``EvalMode``).
    """

    def __init__(self, data: Any = None, dtype: Any = None, device: Any = None, layout: str | None = None,
                 batch: Any = None, index_in_batch: int | None = None, copy: bool = False):
        if batch is not None:  # sample ``index_in_batch`` of a batch, taken when needed
            if not isinstance(batch, _batch.Batch):
                raise ValueError("The `batch` argument must be a `Batch`")
            self._of_batch = (batch, int(index_in_batch or 0))
            return
        if data is None:
            raise ValueError("a Tensor needs data (or a batch and the index of a sample in it)")
        storage, external = _storage_of(data, dtype, device, layout, copy)
        self._set_storage(storage, external)

    def _value(self) -> Any:
        of_batch = getattr(self, "_of_batch", None)
        if of_batch is not None and self._storage is None:
            batch, i = of_batch
            self._storage, self._external = sample_view(batch._value(), i), batch._external
            del self._of_batch
        return super()._value()

    def _array(self) -> Any:
        """The sample as a numpy array (CPU) or CuPy array (GPU), without copying."""
        return self._value()._sample_array(0)

    # -- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(e) for e in self._value()._shapes[0])

    @property
    def ndim(self) -> int:
        return self._value().ndim()

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.bytes

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs a tensor of one element; this one has shape {self.shape}")
        return self.cpu()._array().reshape(()).item()

    # -- data exchange
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.device.device_type != "cpu":
            raise TypeError("a GPU tensor has no numpy view; call .cpu() first")
        arr = self._array()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return np.array(arr, copy=True) if copy else arr

    @property
    def __cuda_array_interface__(self) -> dict:
        storage = self._value()
        if not isinstance(storage, TensorListGPU):
            raise AttributeError("This is not a GPU tensor. Use `.gpu()` to get the CUDA array interface.")
        return storage[0].__cuda_array_interface__

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        storage = self._value()
        if isinstance(storage, TensorListGPU):
            return storage[0].__dlpack__(stream=stream)
        return self._array().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        storage = self._value()
        return (2, storage.device_id()) if isinstance(storage, TensorListGPU) else (1, 0)

    def torch(self, copy: bool = False) -> Any:
        """The sample as a torch tensor on the same device (shares the memory unless ``copy``)."""
        try:
            import torch
        except ImportError:
            raise RuntimeError("Tensor.torch() needs PyTorch") from None
        out = torch.from_dlpack(self)
        return out.clone() if copy else out

    # -- indexing
    def __getitem__(self, index: Any) -> "Tensor":
        """Elements of the sample, as numpy indexes them (ints, slices, ``...``, ``None``); a
        Tensor of the result, computed like any operator's."""
        index = expand_ellipsis(index, self)
        return _call.apply(lambda node: _hooks.subscript(node, index), self)

    def __repr__(self) -> str:
        return _describe("Tensor", np.array2string(_host(self._array()), separator=" ", prefix="    "),
                         self, [f"shape={self.shape}"])


def expand_ellipsis(index: Any, data: Data) -> Any:
    """``index`` with its ``...`` replaced by the full slices it stands for (the pipeline's indexing
    takes no ``...``: it needs the number of dimensions, which here is known)."""
    items = index if isinstance(index, tuple) else (index,)
    where = [k for k, item in enumerate(items) if item is Ellipsis]
    if not where:
        return index
    if len(where) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    named = sum(1 for item in items if item is not Ellipsis and item is not None and item is not newaxis
                and not isinstance(item, newaxis))
    fill = (slice(None),) * max(data.ndim - named, 0)
    return items[:where[0]] + fill + items[where[0] + 1:]


def sample_view(storage: Any, i: int) -> Any:
    """Sample ``i`` of a batch as a batch of one, sharing its memory."""
    arr = storage._sample_array(i)
    if isinstance(storage, TensorListGPU):
        out = TensorListGPU(arr[None], storage._layout, storage.device_id(), storage.stream)
        out._event = storage._event
    else:
        out = TensorListCPU(arr[np.newaxis], storage._layout)
    out._source_info = [storage._source_info[i]]
    return out


def _host(arr: Any) -> np.ndarray:
    return arr if isinstance(arr, np.ndarray) else arr.get()


def _describe(kind: str, body: str, data: Data, extra: list[str]) -> str:
    fields = [f"dtype={data.dtype}"] + ([f'layout="{data.layout}"'] if data.layout else []) + \
             [f'device="{data.device}"'] + extra
    return f"{kind}(\n    {body},\n    " + ",\n    ".join(fields) + ")"


def _storage_of(data: Any, dtype: Any, device: Any, layout: str | None, copy: bool) -> tuple[Any, bool]:
    """(a batch of one sample holding ``data``, whether it is a view of the caller's memory)."""
    if isinstance(data, _batch.Batch):
        raise TypeError("a Batch is many samples: use as_tensor() or tensor() to make one tensor of it")
    want = as_dtype(dtype) if dtype is not None else None
    target = as_device(device) if device is not None else None
    if isinstance(data, Tensor):
        storage = data._value()
        if want is not None and want.type_id != storage.dtype:
            storage = cast_storage(storage, want)
        if target is not None and target != data.device:
            storage = Tensor._wrap(storage).to_device(target)._value()
        if layout is not None:
            storage = sample_view(storage, 0)
            storage.set_layout(layout)
        return storage, data._external and storage is data._value()
    arr, gpu, shares = array_of(data)
    if want is not None and not shares and not gpu and np.dtype(arr.dtype) != want.numpy_type():
        arr, shares = np.asarray(data, dtype=want.numpy_type()), False  # Python data: typed as asked
    want_gpu = gpu if target is None else target.device_type == "gpu"
    moved = to_device(arr, gpu, want_gpu)
    storage = single(moved, want_gpu, "" if layout is None else layout, copy and moved is arr)
    if want is not None and want.type_id != storage.dtype:
        storage = cast_storage(storage, want)
        shares = False
    return storage, shares and moved is arr and not copy


def cast_storage(storage: Any, want: DType) -> Any:
    """A batch converted to another type as the ``cast`` operator converts (rounding to nearest,
    saturating), computed now."""
    from ... import fn
    return _call.apply(lambda node: fn.cast(node, dtype=want.type_id), _batch.Batch._wrap(storage))._value()


def tensor(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None,
           pad: bool = False) -> Tensor:
    """A Tensor holding a copy of ``data`` (a Batch: its samples stacked, padded with zeros to the
    largest shape with ``pad``)."""
    if isinstance(data, _batch.Batch):
        return _batch.stacked_tensor(data, dtype, device, layout, pad, copy=True)
    return Tensor(data, dtype, device, layout, copy=True)


def as_tensor(data: Any, dtype: Any = None, device: Any = None, layout: str | None = None,
              pad: bool = False) -> Tensor:
    """``data`` as a Tensor, sharing its memory where it can (a Tensor is returned as is)."""
    if isinstance(data, Tensor) and dtype is None and device is None and layout is None:
        return data
    if isinstance(data, _batch.Batch):
        return _batch.stacked_tensor(data, dtype, device, layout, pad, copy=False)
    return Tensor(data, dtype, device, layout)
