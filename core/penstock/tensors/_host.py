"""Host tensors and batches: ``TensorCPU`` and ``TensorListCPU`` (numpy memory)."""
from __future__ import annotations

import ctypes
from typing import Any, Iterable, Sequence

import numpy as np

from .. import _engine
from ..types import to_dali_type
from ._base import _Batch, _Tensor, check_layout, layout_str


def as_host_array(obj: Any) -> np.ndarray:
    """numpy view of any host array-like: numpy, DLPack (torch CPU, jax ...), buffers."""
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, TensorCPU):
        return obj._array
    if hasattr(obj, "__cuda_array_interface__"):
        raise TypeError("expected a host (CPU) array, got a GPU array; use the GPU tensor types")
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        return np.from_dlpack(obj)
    if type(obj).__name__ == "PyCapsule":  # a bare DLPack capsule (TensorCPU(x.__dlpack__()))
        return np.from_dlpack(_DLPackCapsule(obj))
    return np.asarray(obj)


class _DLPackCapsule:
    """Presents a bare DLPack capsule through the __dlpack__ protocol numpy expects."""

    def __init__(self, capsule: Any):
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU


class TensorCPU(_Tensor):
    """One sample on the host. ``np.asarray(t)`` and ``np.from_dlpack(t)`` view it without copying."""
    __module__ = "penstock.tensors"

    def __init__(self, data: Any = None, layout: str = "", *, _source_info: str = ""):
        arr = as_host_array(data) if data is not None else np.zeros((0,), np.uint8)
        to_dali_type(arr.dtype)  # validates the element type
        self._array = arr
        self._layout = layout_str(layout)
        check_layout(self._layout, arr.ndim, "TensorCPU")
        self._source_info = _source_info

    # -- data
    def as_cpu(self) -> "TensorCPU":
        return self

    def data_ptr(self) -> int:
        return self._array.__array_interface__["data"][0]

    def copy_to_external(self, ptr: int) -> None:
        arr = np.ascontiguousarray(self._array)
        ctypes.memmove(ptr, arr.ctypes.data, arr.nbytes)

    @property
    def __array_interface__(self) -> dict:
        return self._array.__array_interface__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self._array, dtype=dtype)
        return self._array if dtype is None else self._array.astype(dtype, copy=False)

    def __buffer__(self, flags: int) -> memoryview:  # PEP 688 (Python 3.12+)
        return memoryview(self._array)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()

    def __repr__(self) -> str:
        return (f"TensorCPU(\n    {np.array2string(self._array, prefix='    ')},\n"
                f"    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    shape={self.shape()})")


# Batches at least this large come from the engine's buffer pool, which maps them from the system
# (csrc/engine/buffer_pool.cpp): glibc maps those above its threshold and raises the threshold to
# each one freed, after which they come from its heaps, where they linger as free memory.
POOLED_BYTES = 64 << 10


def host_buffer(count: int, dtype: Any) -> np.ndarray:
    """An uninitialized 1-D array; large ones reuse pooled memory (no fresh page faults, and none of
    glibc's heaps left holding a batch's worth of free memory in every thread that made one)."""
    dtype = np.dtype(dtype)
    nbytes = count * dtype.itemsize
    if nbytes < POOLED_BYTES or dtype.hasobject:  # references need numpy's own (zeroed) memory
        return np.empty(count, dtype)
    return _engine.empty_pooled(nbytes).view(dtype)


def _pack(arrays: Sequence[np.ndarray], what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One buffer holding every sample back to back, plus shapes and element offsets."""
    if not arrays:
        return np.zeros((0,), np.uint8), np.zeros((0, 0), np.int64), np.zeros((0,), np.int64)
    ndim, dtype = arrays[0].ndim, arrays[0].dtype
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(f"{what}: sample {i} has {a.ndim} dimensions, sample 0 has {ndim}; "
                             "all samples of a batch must have the same number of dimensions")
        if a.dtype != dtype:
            raise TypeError(f"{what}: sample {i} has type {a.dtype}, sample 0 has {dtype}; "
                            "all samples of a batch must have the same type")
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    volumes = shapes.prod(axis=1) if ndim else np.ones(len(arrays), np.int64)
    offsets = np.zeros(len(arrays), np.int64)
    np.cumsum(volumes[:-1], out=offsets[1:])
    buf = host_buffer(int(volumes.sum()), dtype)
    for a, off, vol in zip(arrays, offsets, volumes):
        buf[off:off + vol] = a.reshape(-1)
    return buf, shapes, offsets


class TensorListCPU(_Batch):
    """A batch of samples on the host (same type and number of dimensions, shapes may differ)."""
    __module__ = "penstock.tensors"
    _device = "cpu"

    def __init__(self, data: Any = None, layout: str = "", *, _source_info: Sequence[str] | None = None):
        if data is None:
            data = []
        if isinstance(data, TensorListCPU):
            self._set(data._buf, data._shapes, data._offsets, layout or data._layout)
            self._source_info = list(data._source_info)
            return
        if isinstance(data, (list, tuple)):
            arrays = [as_host_array(a) for a in data]
            infos = [a._source_info if isinstance(a, TensorCPU) else "" for a in data]
            buf, shapes, offsets = _pack(arrays, "TensorListCPU")
            if not arrays and layout:
                shapes = np.zeros((0, len(layout)), np.int64)
        else:
            arr = as_host_array(data)
            if arr.ndim == 0:
                raise ValueError("TensorListCPU from a single array needs a leading batch dimension")
            arr = np.ascontiguousarray(arr)
            n = arr.shape[0]
            shapes = np.tile(np.array(arr.shape[1:], np.int64), (n, 1)).reshape(n, arr.ndim - 1)
            vol = int(np.prod(arr.shape[1:], dtype=np.int64))
            offsets = np.arange(n, dtype=np.int64) * vol
            buf = arr.reshape(-1)
            infos = [""] * n
        to_dali_type(buf.dtype)
        self._set(buf, shapes, offsets, layout_str(layout))
        self._source_info = list(_source_info) if _source_info is not None else infos

    # -- samples
    def _sample_array(self, i: int) -> np.ndarray:
        off = int(self._offsets[i])
        shape = tuple(int(e) for e in self._shapes[i])
        vol = int(np.prod(shape, dtype=np.int64))
        return self._buf[off:off + vol].reshape(shape)

    def __getitem__(self, i: int) -> TensorCPU:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        i %= n
        return TensorCPU(self._sample_array(i), self._layout, _source_info=self._source_info[i])

    def at(self, i: int) -> np.ndarray:
        """A copy of sample ``i`` as a numpy array."""
        return np.array(self[i]._array)

    def as_array(self) -> np.ndarray:
        """The whole batch as one numpy array (a view when possible); needs uniform shapes."""
        if not self.is_dense_tensor():
            raise RuntimeError("as_array: the samples of this batch have different shapes "
                               f"({self.shape()[:4]}...); only uniform batches form one array")
        n = len(self)
        sample_shape = tuple(int(e) for e in self._shapes[0]) if n else ()
        if n == 0:
            return np.zeros((0,) + sample_shape, self._buf.dtype)
        if self._is_packed_cached():
            vol = int(np.prod(sample_shape, dtype=np.int64))
            return self._buf[:n * vol].reshape((n,) + sample_shape)
        return np.stack([self._sample_array(i) for i in range(n)])

    def as_tensor(self) -> TensorCPU:
        return TensorCPU(self.as_array())

    def as_reshaped_tensor(self, shape: Sequence[int]) -> TensorCPU:
        return TensorCPU(self.as_array().reshape(tuple(shape)))

    def as_cpu(self) -> "TensorListCPU":
        return self

    def data_ptr(self) -> int:
        return self._buf.__array_interface__["data"][0]

    def copy_to_external(self, ptr: int) -> None:
        arr = self.as_array() if self.is_dense_tensor() else np.concatenate(
            [self._sample_array(i).reshape(-1) for i in range(len(self))])
        arr = np.ascontiguousarray(arr)
        ctypes.memmove(ptr, arr.ctypes.data, arr.nbytes)

    @staticmethod
    def broadcast(tensor: Any, num_samples: int) -> "TensorListCPU":
        arr = as_host_array(tensor)
        layout = tensor.layout() if isinstance(tensor, TensorCPU) else ""
        return TensorListCPU(np.broadcast_to(arr, (num_samples,) + arr.shape).copy(), layout)

    @staticmethod
    def from_dlpack_list(list_of_objects: Iterable[Any], layout: str | None = None,
                         contiguous: bool = False) -> "TensorListCPU":
        """A batch of host DLPack objects (torch CPU tensors, numpy arrays ...), packed into one
        buffer whatever ``contiguous`` says."""
        return TensorListCPU([np.from_dlpack(t) for t in list_of_objects], layout_str(layout))
