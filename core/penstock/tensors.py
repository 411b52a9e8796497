"""Tensors and batches of tensors.

A batch (``TensorList*``) is one packed buffer with per-sample shapes and offsets: the form in
which batches cross into native kernels, and one whose dense case views out as a single array
with a leading batch dimension without copying.
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterable, Sequence

import numpy as np

from .types import DALIDataType, TensorLayout, to_dali_type, to_numpy_type

__all__ = ["TensorCPU", "TensorListCPU", "TensorGPU", "TensorListGPU"]


def _layout_str(layout: Any) -> str:
    return "" if layout is None else str(layout)


def _check_layout(layout: str, ndim: int, what: str) -> None:
    if layout and len(layout) != ndim:
        raise ValueError(f"{what}: layout '{layout}' has {len(layout)} dimensions but the "
                         f"data has {ndim}")


def _as_host_array(obj: Any) -> np.ndarray:
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


class TensorCPU:
    """One sample on the host. ``np.asarray(t)`` and ``np.from_dlpack(t)`` view it without copying."""

    def __init__(self, data: Any = None, layout: str = "", *, _source_info: str = ""):
        arr = _as_host_array(data) if data is not None else np.zeros((0,), np.uint8)
        to_dali_type(arr.dtype)  # validates the element type
        self._array = arr
        self._layout = _layout_str(layout)
        _check_layout(self._layout, arr.ndim, "TensorCPU")
        self._source_info = _source_info

    # -- metadata
    def shape(self) -> list[int]:
        return list(self._array.shape)

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._array.dtype)

    def ndim(self) -> int:
        return self._array.ndim

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def set_layout(self, layout: str) -> None:
        _check_layout(_layout_str(layout), self._array.ndim, "TensorCPU.set_layout")
        self._layout = _layout_str(layout)

    def source_info(self) -> str:
        return self._source_info

    def get_property(self, key: str) -> Any:
        if key == "source_info":
            return self._source_info
        if key == "layout":
            return self._layout
        raise KeyError(f"TensorCPU has no property '{key}'")

    # -- data
    def as_cpu(self) -> "TensorCPU":
        return self

    def data_ptr(self) -> int:
        return self._array.__array_interface__["data"][0]

    def copy_to_external(self, ptr: int) -> None:
        arr = np.ascontiguousarray(self._array)
        ctypes.memmove(ptr, arr.ctypes.data, arr.nbytes)

    def squeeze(self, dim: int | None = None) -> bool:
        """Removes unit dimensions in place; returns whether the shape changed."""
        before = self._array.shape
        if dim is None:
            keep = [i for i, e in enumerate(before) if e != 1]
        else:
            d = dim + len(before) if dim < 0 else dim
            if not 0 <= d < len(before) or before[d] != 1:
                raise RuntimeError(f"cannot squeeze dimension {dim} of shape {list(before)}")
            keep = [i for i in range(len(before)) if i != d]
        self._array = self._array.reshape([before[i] for i in keep])
        if self._layout:
            self._layout = "".join(self._layout[i] for i in keep)
        return self._array.shape != before

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
    buf = np.empty(int(volumes.sum()), dtype)
    for a, off, vol in zip(arrays, offsets, volumes):
        buf[off:off + vol] = a.reshape(-1)
    return buf, shapes, offsets


class TensorListCPU:
    """A batch of samples on the host (same type and number of dimensions, shapes may differ)."""

    def __init__(self, data: Any = None, layout: str = "", *, _source_info: Sequence[str] | None = None):
        if data is None:
            data = []
        if isinstance(data, TensorListCPU):
            self._set(data._buf, data._shapes, data._offsets, layout or data._layout)
            self._source_info = list(data._source_info)
            return
        if isinstance(data, (list, tuple)):
            arrays = [_as_host_array(a) for a in data]
            infos = [a._source_info if isinstance(a, TensorCPU) else "" for a in data]
            buf, shapes, offsets = _pack(arrays, "TensorListCPU")
            if not arrays and layout:
                shapes = np.zeros((0, len(layout)), np.int64)
        else:
            arr = _as_host_array(data)
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
        self._set(buf, shapes, offsets, _layout_str(layout))
        self._source_info = list(_source_info) if _source_info is not None else infos

    def _set(self, buf: np.ndarray, shapes: np.ndarray, offsets: np.ndarray, layout: str) -> None:
        self._packed = None
        self._buf = buf
        self._shapes = shapes
        self._offsets = offsets
        self._layout = _layout_str(layout)
        _check_layout(self._layout, shapes.shape[1], "TensorListCPU")

    @classmethod
    def _from_packed(cls, buf: np.ndarray, shapes: np.ndarray, offsets: np.ndarray | None = None,
                     layout: str = "", source_info: Sequence[str] | None = None) -> "TensorListCPU":
        """Wraps an already packed buffer (no copy): the constructor kernels use."""
        tl = cls.__new__(cls)
        if offsets is None:
            offsets = _packed_offsets(shapes)
            tl._packed = True
        tl._set(buf, shapes, offsets, layout)
        tl._source_info = list(source_info) if source_info is not None else [""] * len(shapes)
        return tl

    # -- metadata
    def __len__(self) -> int:
        return len(self._shapes)

    def shape(self) -> list[tuple[int, ...]]:
        return [tuple(int(e) for e in s) for s in self._shapes]

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._buf.dtype)

    def ndim(self) -> int:
        return int(self._shapes.shape[1])

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def set_layout(self, layout: str) -> None:
        _check_layout(_layout_str(layout), self.ndim(), "TensorListCPU.set_layout")
        self._layout = _layout_str(layout)

    def source_info(self, i: int) -> str:
        return self._source_info[i]

    def _volumes(self) -> np.ndarray:
        return self._shapes.prod(axis=1) if self.ndim() else np.ones(len(self), np.int64)

    def _is_packed(self) -> bool:
        return bool(np.array_equal(self._offsets, _packed_offsets(self._shapes)))

    def _is_packed_cached(self) -> bool:
        """Whether samples lie back to back from offset 0 (cached: batches are not mutated)."""
        packed = getattr(self, "_packed", None)
        if packed is None:
            packed = self._packed = self._is_packed()
        return packed

    def _volume_total(self) -> int:
        """Elements from the first sample's start to the last one's end (packed batches)."""
        n = len(self)
        if n == 0:
            return 0
        last = 1
        for extent in self._shapes[-1].tolist():
            last *= extent
        return int(self._offsets[-1]) + last

    def is_dense_tensor(self) -> bool:
        return len(self) == 0 or bool((self._shapes == self._shapes[0]).all())

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

    def __iter__(self):
        return (self[i] for i in range(len(self)))

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
        if self._is_packed():
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

    def reset(self) -> None:
        self._set(np.zeros((0,), self._buf.dtype), np.zeros((0, self.ndim()), np.int64),
                  np.zeros((0,), np.int64), self._layout)
        self._source_info = []

    def reinterpret(self, dtype: DALIDataType) -> "TensorListCPU":
        """Views the bytes as another type of the same size."""
        new = np.dtype(to_numpy_type(dtype))
        if new.itemsize != self._buf.dtype.itemsize:
            raise ValueError(f"reinterpret: {self.dtype} and {DALIDataType(dtype)} differ in size")
        self._buf = self._buf.view(new)
        return self

    @staticmethod
    def broadcast(tensor: Any, num_samples: int) -> "TensorListCPU":
        arr = _as_host_array(tensor)
        layout = tensor.layout() if isinstance(tensor, TensorCPU) else ""
        return TensorListCPU(np.broadcast_to(arr, (num_samples,) + arr.shape).copy(), layout)

    @staticmethod
    def from_dlpack_list(tensors: Iterable[Any], layout: str = "") -> "TensorListCPU":
        return TensorListCPU([np.from_dlpack(t) for t in tensors], layout)

    def __repr__(self) -> str:
        return (f"TensorListCPU(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"cpu\",\n    num_samples={len(self)},\n    shape={self.shape()})")


def _packed_offsets(shapes: np.ndarray) -> np.ndarray:
    n = len(shapes)
    volumes = shapes.prod(axis=1) if shapes.shape[1] else np.ones(n, np.int64)
    offsets = np.zeros(n, np.int64)
    if n > 1:
        np.cumsum(volumes[:-1], out=offsets[1:])
    return offsets


def _cupy():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("GPU tensors need CuPy (pip install penstock[gpu]) and a CUDA device") from None
    return cupy


class TensorGPU:
    """One sample in GPU memory (a CuPy array underneath)."""

    def __init__(self, data: Any, layout: str = "", device_id: int | None = None, stream: Any = None):
        cp = _cupy()
        self._array = data._array if isinstance(data, TensorGPU) else cp.asarray(data)
        self._layout = _layout_str(layout)
        _check_layout(self._layout, self._array.ndim, "TensorGPU")
        self._device_id = self._array.device.id if device_id is None else device_id
        self.stream = stream

    def shape(self) -> list[int]:
        return list(self._array.shape)

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._array.dtype)

    def ndim(self) -> int:
        return self._array.ndim

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def device_id(self) -> int:
        return self._device_id

    def data_ptr(self) -> int:
        return int(self._array.data.ptr)

    def as_cpu(self) -> TensorCPU:
        return TensorCPU(_cupy().asnumpy(self._array), self._layout)

    @property
    def __cuda_array_interface__(self) -> dict:
        return self._array.__cuda_array_interface__

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()


class TensorListGPU:
    """A batch in GPU memory: a packed CuPy buffer with per-sample shapes and offsets."""

    def __init__(self, data: Any = None, layout: str = "", device_id: int | None = None, stream: Any = None):
        cp = _cupy()
        if isinstance(data, TensorListCPU):
            host = data
        elif isinstance(data, (list, tuple)):
            host = None
            arrays = [cp.asarray(a._array if isinstance(a, TensorGPU) else a) for a in data]
            shapes = np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), -1 if arrays else 0)
            buf = cp.concatenate([a.reshape(-1) for a in arrays]) if arrays else cp.zeros((0,), cp.uint8)
            self._set(buf, shapes, _packed_offsets(shapes), layout, device_id, stream)
            return
        else:
            arr = cp.ascontiguousarray(cp.asarray(data))
            host = None
            n = arr.shape[0]
            shapes = np.tile(np.array(arr.shape[1:], np.int64), (n, 1)).reshape(n, arr.ndim - 1)
            self._set(arr.reshape(-1), shapes, _packed_offsets(shapes), layout, device_id, stream)
            return
        self._set(cp.asarray(host._buf), host._shapes, host._offsets, layout or host._layout,
                  device_id, stream)

    def _set(self, buf: Any, shapes: np.ndarray, offsets: np.ndarray, layout: str,
             device_id: int | None, stream: Any) -> None:
        self._buf, self._shapes, self._offsets = buf, shapes, offsets
        self._layout = _layout_str(layout)
        _check_layout(self._layout, shapes.shape[1], "TensorListGPU")
        self._device_id = buf.device.id if device_id is None else device_id
        self.stream = stream

    def __len__(self) -> int:
        return len(self._shapes)

    def shape(self) -> list[tuple[int, ...]]:
        return [tuple(int(e) for e in s) for s in self._shapes]

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._buf.dtype)

    def ndim(self) -> int:
        return int(self._shapes.shape[1])

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def device_id(self) -> int:
        return self._device_id

    def is_dense_tensor(self) -> bool:
        return len(self) == 0 or bool((self._shapes == self._shapes[0]).all())

    def __getitem__(self, i: int) -> TensorGPU:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        i %= n
        off = int(self._offsets[i])
        shape = tuple(int(e) for e in self._shapes[i])
        vol = int(np.prod(shape, dtype=np.int64))
        return TensorGPU(self._buf[off:off + vol].reshape(shape), self._layout, self._device_id, self.stream)

    def as_tensor(self) -> TensorGPU:
        if not self.is_dense_tensor():
            raise RuntimeError("as_tensor: the samples of this batch have different shapes")
        shape = (len(self),) + (tuple(int(e) for e in self._shapes[0]) if len(self) else ())
        n = int(np.prod(shape, dtype=np.int64))
        return TensorGPU(self._buf[:n].reshape(shape), "", self._device_id, self.stream)

    def as_cpu(self) -> TensorListCPU:
        host = _cupy().asnumpy(self._buf)
        return TensorListCPU._from_packed(host, self._shapes.copy(), self._offsets.copy(), self._layout)

    def data_ptr(self) -> int:
        return int(self._buf.data.ptr)

    def __repr__(self) -> str:
        return (f"TensorListGPU(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"gpu\",\n    num_samples={len(self)},\n    shape={self.shape()})")
