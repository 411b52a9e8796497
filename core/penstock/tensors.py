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


class _Batch:
    """What host and device batches share: one packed buffer (``_buf``) with per-sample shapes
    ``_shapes`` [N, ndim] and element offsets ``_offsets`` [N], a layout and source infos."""

    def _set(self, buf: Any, shapes: np.ndarray, offsets: np.ndarray, layout: str) -> None:
        self._packed = None
        self._buf = buf
        self._shapes = shapes
        self._offsets = offsets
        self._layout = _layout_str(layout)
        _check_layout(self._layout, shapes.shape[1], type(self).__name__)

    @classmethod
    def _from_packed(cls, buf: Any, shapes: np.ndarray, offsets: np.ndarray | None = None,
                     layout: str = "", source_info: Sequence[str] | None = None) -> Any:
        """Wraps an already packed buffer (no copy): the constructor kernels use."""
        tl = cls.__new__(cls)
        tl._init_device_state()
        if offsets is None:
            offsets = _packed_offsets(shapes)
            tl._set(buf, shapes, offsets, layout)
            tl._packed = True
        else:
            tl._set(buf, shapes, offsets, layout)
        tl._source_info = list(source_info) if source_info is not None else [""] * len(shapes)
        return tl

    def _init_device_state(self) -> None:
        """Device batches record their producer's stream here."""

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
        _check_layout(_layout_str(layout), self.ndim(), f"{type(self).__name__}.set_layout")
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

    def _sample_slice(self, i: int) -> tuple[int, int, tuple[int, ...]]:
        """(element offset, volume, shape) of sample ``i`` (negative indices count from the end)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        shape = tuple(int(e) for e in self._shapes[i % n])
        return int(self._offsets[i % n]), int(np.prod(shape, dtype=np.int64)), shape

    def _dense_shape(self) -> tuple[int, ...]:
        if not self.is_dense_tensor():
            raise RuntimeError(f"{type(self).__name__}: the samples of this batch have different shapes "
                               f"({self.shape()[:4]}...); only uniform batches form one tensor")
        return (len(self),) + (tuple(int(e) for e in self._shapes[0]) if len(self) else ())


class TensorListCPU(_Batch):
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
        from ._cuda import INSTALL_HINT
        raise RuntimeError(f"GPU tensors need CuPy and a CUDA device: {INSTALL_HINT}") from None
    return cupy


class _StreamOrdered:
    """GPU data produced on a CUDA stream: ``stream`` is the producer's stream and ``_event`` marks
    the end of the producing work, so consumers wait on the GPU, never on the host."""
    stream: Any
    _event: Any

    def _init_device_state(self) -> None:
        self.stream = None
        self._event = None
        self._deferred = None  # queues the work that fills the batch (a decoder finishing in the background)
        self._deferred_by = None  # the operator that deferred it (set by the executor), named in its failures

    def _complete(self) -> None:
        """Queues the deferred work that fills this batch, if any (on the calling thread's stream)."""
        if self._deferred is not None:
            fill, self._deferred = self._deferred, None
            fill()

    def _wait_on_host(self) -> None:
        if self._event is not None:
            self._event.synchronize()
        elif self.stream is not None:
            self.stream.synchronize()

    def _order_stream_after(self, handle: int) -> None:
        """Makes the CUDA stream ``handle`` (an int; 1 or 2 = the legacy/per-thread default
        stream) wait for the producing work."""
        cp = _cupy()
        event = self._event
        if event is None:
            if self.stream is None:
                return
            with cp.cuda.Device(self._device_id):  # an event is recorded on its stream's device
                event = self.stream.record()
        cp.cuda.runtime.streamWaitEvent(0 if handle == 1 else handle, event.ptr, 0)

    def _export(self, array: Any, stream: Any) -> Any:
        """A DLPack capsule of ``array`` for a consumer working on ``stream`` (the DLPack protocol:
        None = the legacy default stream, -1 = no ordering wanted). The consumer's stream waits
        for the producer; when the consumer frees the data, the producer's stream waits for the
        consumer's work before the memory can be reused (see _ConsumerGuard)."""
        if stream is None:
            stream = 1
        stream = int(stream)
        if stream != -1:
            self._order_stream_after(stream)
        if self.stream is not None and stream in _DEFAULT_STREAMS:
            array = _ConsumerGuard.view(array, self.stream, stream)
        try:
            return array.__dlpack__(stream=-1)
        except TypeError:  # CuPy without the stream argument
            return array.toDlpack()


# Stream handles that stay valid for the whole process (the legacy and per-thread default streams).
_DEFAULT_STREAMS = (0, 1, 2)


class _ConsumerGuard:
    """Owns a device buffer lent through DLPack to a consumer working on a default stream (the
    common case: PyTorch and JAX on their default streams). The producer's memory pool hands
    memory back out to later work on the producer's stream; so when the consumer drops the buffer,
    the producer's stream is made to wait for everything the consumer queued so far. A consumer
    on a stream of its own keeps the batch alive while its work may still read it (as with any
    DLPack exchange): its stream may be gone by the time the buffer is dropped."""
    __slots__ = ("array", "producer", "consumer")

    def __init__(self, array: Any, producer: Any, consumer: int):
        self.array, self.producer, self.consumer = array, producer, consumer

    @classmethod
    def view(cls, array: Any, producer: Any, consumer: int) -> Any:
        cp = _cupy()
        guard = cls(array, producer, consumer)
        mem = cp.cuda.UnownedMemory(array.data.ptr, array.nbytes, guard, array.device.id)
        return cp.ndarray(array.shape, array.dtype, cp.cuda.MemoryPointer(mem, 0), strides=array.strides)

    def __del__(self) -> None:
        try:
            cp = _cupy()
            rt = cp.cuda.runtime
            with cp.cuda.Device(self.array.device.id):
                event = cp.cuda.Event(disable_timing=True)
                rt.eventRecord(event.ptr, 0 if self.consumer == 1 else self.consumer)
                self.producer.wait_event(event)
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to order
            pass


class TensorGPU(_StreamOrdered):
    """One sample in GPU memory (a CuPy array underneath)."""

    def __init__(self, data: Any, layout: str = "", device_id: int | None = None, stream: Any = None):
        cp = _cupy()
        self._init_device_state()
        if isinstance(data, TensorGPU):
            self._array, self.stream, self._event = data._array, data.stream, data._event
        else:
            self._array = cp.asarray(data)
        if stream is not None:
            self.stream = stream
        self._layout = _layout_str(layout)
        _check_layout(self._layout, self._array.ndim, "TensorGPU")
        self._device_id = self._array.device.id if device_id is None else device_id

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
        """A host copy, taken once the producing work has finished."""
        self._wait_on_host()
        return TensorCPU(_cupy().asnumpy(self._array), self._layout)

    @property
    def __cuda_array_interface__(self) -> dict:
        iface = dict(self._array.__cuda_array_interface__)
        iface["version"] = 3
        iface["stream"] = int(self.stream.ptr) if self.stream is not None and self.stream.ptr else None
        if iface["stream"] is None:
            iface.pop("stream")
        return iface

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        return self._export(self._array, stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device_id)  # kDLCUDA

    def __repr__(self) -> str:
        return (f"TensorGPU(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"gpu\",\n    shape={self.shape()})")


class TensorListGPU(_StreamOrdered, _Batch):
    """A batch in GPU memory: a packed CuPy buffer with per-sample shapes and offsets."""

    def __init__(self, data: Any = None, layout: str = "", device_id: int | None = None, stream: Any = None):
        cp = _cupy()
        self._init_device_state()
        infos = None
        if data is None:
            data = []
        if isinstance(data, TensorListGPU):
            buf, shapes, offsets = data._buf, data._shapes, data._offsets
            layout = layout or data._layout
            self.stream, self._event, infos = data.stream, data._event, data._source_info
        elif isinstance(data, TensorListCPU):
            buf, shapes, offsets = cp.asarray(data._buf), data._shapes, data._offsets
            layout, infos = layout or data._layout, data._source_info
        elif isinstance(data, (list, tuple)):
            arrays = [cp.asarray(a._array if isinstance(a, TensorGPU) else a) for a in data]
            for i, a in enumerate(arrays[1:], 1):
                if a.ndim != arrays[0].ndim or a.dtype != arrays[0].dtype:
                    raise TypeError(f"TensorListGPU: sample {i} is {a.dtype} with {a.ndim} dims, sample 0 "
                                    f"{arrays[0].dtype} with {arrays[0].ndim}; a batch needs one type and rank")
            shapes = np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), arrays[0].ndim if arrays else 0)
            buf = cp.concatenate([a.reshape(-1) for a in arrays]) if arrays else cp.zeros((0,), cp.uint8)
            offsets = _packed_offsets(shapes)
        else:
            arr = cp.ascontiguousarray(cp.asarray(data))
            if arr.ndim == 0:
                raise ValueError("TensorListGPU from a single array needs a leading batch dimension")
            n = arr.shape[0]
            shapes = np.tile(np.array(arr.shape[1:], np.int64), (n, 1)).reshape(n, arr.ndim - 1)
            buf, offsets = arr.reshape(-1), _packed_offsets(shapes)
        to_dali_type(buf.dtype)
        self._set(buf, shapes, offsets, layout)
        self._source_info = list(infos) if infos is not None else [""] * len(shapes)
        if stream is not None:
            self.stream = stream
        self._device_id = buf.device.id if device_id is None else device_id

    @classmethod
    def _from_packed(cls, buf: Any, shapes: np.ndarray, offsets: np.ndarray | None = None,
                     layout: str = "", source_info: Sequence[str] | None = None) -> "TensorListGPU":
        tl = super()._from_packed(buf, shapes, offsets, layout, source_info)
        tl._device_id = buf.device.id
        return tl

    def device_id(self) -> int:
        return self._device_id

    def _sample_array(self, i: int) -> Any:
        off, vol, shape = self._sample_slice(i)
        return self._buf[off:off + vol].reshape(shape)

    def __getitem__(self, i: int) -> TensorGPU:
        t = TensorGPU(self._sample_array(i), self._layout, self._device_id, self.stream)
        t._event = self._event
        return t

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def at(self, i: int) -> TensorGPU:
        return self[i]

    def _dense_array(self) -> Any:
        shape = self._dense_shape()
        n = int(np.prod(shape, dtype=np.int64))
        if len(self) and not self._is_packed_cached():
            return _cupy().stack([self._sample_array(i) for i in range(len(self))])
        return self._buf[:n].reshape(shape)

    def as_tensor(self) -> TensorGPU:
        t = TensorGPU(self._dense_array(), "", self._device_id, self.stream)
        t._event = self._event
        return t

    def as_reshaped_tensor(self, shape: Sequence[int]) -> TensorGPU:
        t = TensorGPU(self._dense_array().reshape(tuple(shape)), "", self._device_id, self.stream)
        t._event = self._event
        return t

    def as_cpu(self) -> TensorListCPU:
        """A host copy, taken once the producing work has finished."""
        self._wait_on_host()
        host = _cupy().asnumpy(self._buf)
        return TensorListCPU._from_packed(host, self._shapes.copy(), self._offsets.copy(), self._layout,
                                          self._source_info)

    def data_ptr(self) -> int:
        return int(self._buf.data.ptr)

    def copy_to_external(self, ptr: int, cuda_stream: Any = None, non_blocking: bool = False,
                         use_copy_kernel: bool = False) -> None:
        """Copies the samples back to back into device memory at ``ptr`` on ``cuda_stream``
        (ordered after the producer; the host waits unless ``non_blocking``)."""
        cp = _cupy()
        src = self._dense_array().reshape(-1) if self.is_dense_tensor() else cp.concatenate(
            [self._sample_array(i).reshape(-1) for i in range(len(self))])
        handle = 1 if cuda_stream is None else int(getattr(cuda_stream, "ptr", getattr(cuda_stream, "cuda_stream", cuda_stream)))
        self._order_stream_after(handle)
        rt = cp.cuda.runtime
        rt.memcpyAsync(int(ptr), src.data.ptr, src.nbytes, rt.memcpyDeviceToDevice, 0 if handle == 1 else handle)
        if not non_blocking:
            rt.streamSynchronize(0 if handle == 1 else handle)

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.as_tensor().__cuda_array_interface__

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        return self._export(self._dense_array(), stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device_id)

    def reset(self) -> None:
        self._set(self._buf[:0], np.zeros((0, self.ndim()), np.int64), np.zeros((0,), np.int64), self._layout)
        self._source_info = []

    def __repr__(self) -> str:
        return (f"TensorListGPU(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"gpu\",\n    num_samples={len(self)},\n    shape={self.shape()})")
