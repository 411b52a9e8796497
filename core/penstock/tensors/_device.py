"""GPU tensors and batches: ``TensorGPU`` and ``TensorListGPU`` (CuPy memory, ordered by CUDA streams)."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .. import _engine
from ..types import to_dali_type
from ._base import _Batch, _Tensor, check_layout, layout_str, packed_offsets
from ._host import TensorCPU, TensorListCPU

INSTALL_HINT = ("install the GPU extra for your CUDA version: pip install 'penstock-data[cuda13]' "
                "(CUDA 13) or 'penstock-data[cuda12]' (CUDA 12)")


def _cupy():
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"GPU tensors need CuPy and a CUDA device: {INSTALL_HINT}") from None
    return cupy


class _StreamHandle:
    """A raw CUDA stream handle under the CUDA stream protocol (``__cuda_stream__``)."""
    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def cupy_stream(handle: int, device_id: int = -1) -> Any:
    """CuPy's stream object for the CUDA stream ``handle`` (0: the legacy default stream), made by
    the caller's code, not CuPy's. CuPy 14 takes foreign streams through the CUDA stream protocol
    (``Stream.from_external``) and deprecates ``ExternalStream``; the stream then names no device
    (as ExternalStream's ``device_id=-1``), so it is used under its own device, as every caller does."""
    cp = _cupy()
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is None:
        return cp.cuda.ExternalStream(int(handle), int(device_id))
    return from_external(_StreamHandle(int(handle)))


def _device_array(data: Any) -> Any:
    """``data`` as a CuPy array, on the GPU it is on. ``cupy.asarray`` alone copies device data of
    another GPU than the calling thread's current one onto the current one: with one pipeline per
    GPU in a process (or a rank that never called ``torch.cuda.set_device``) every batch of the
    other GPUs was copied, and the copy sat on a GPU its tensor did not name. Host data goes to
    the current GPU."""
    cp = _cupy()
    if isinstance(data, cp.ndarray):
        return data
    device = _cuda_device_of(data)
    if device is None:
        return cp.asarray(data)
    with cp.cuda.Device(device):
        return cp.asarray(data)


def _current_stream(array: Any) -> Any:
    """The stream data handed in without one is ready on: CuPy's current stream of the array's
    GPU (CuPy queues its own work there, and imports through DLPack or the CUDA array interface
    are ordered onto it). Recorded as the producer's, so a consumer on another stream (a
    non-blocking one, torch's, a copy's) waits for the data instead of reading it half made."""
    with array.device:
        return _cupy().cuda.get_current_stream()


def _cuda_device_of(data: Any) -> int | None:
    """The CUDA device holding ``data`` (DLPack or CUDA array interface), None for host data."""
    if hasattr(data, "__dlpack_device__"):
        kind, device = data.__dlpack_device__()
        return int(device) if kind == 2 else None  # kDLCUDA; pinned host memory is host data
    interface = getattr(data, "__cuda_array_interface__", None)
    if interface is None or not interface["data"][0]:
        return None
    return int(_cupy().cuda.runtime.pointerGetAttributes(interface["data"][0]).device)


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
        if self._event is None and self.stream is None:
            return
        # through the engine, with the GIL held: CuPy's calls give it away, and this runs on the
        # training loop's thread for every batch (_cuda/_stream_queue.py says what that costs)
        waiting = 0 if handle == 1 else handle
        with _cupy().cuda.Device(self._device_id):  # the driver calls need the batch's device current
            if self._event is not None:
                _engine.wait_event(waiting, int(self._event.ptr))
            else:
                _engine.wait_for_stream(waiting, int(self.stream.ptr))

    def _export(self, owner: Any, ptr: int, dtype: np.dtype, shape: Sequence[int], strides: Sequence[int],
                stream: Any) -> Any:
        """A DLPack capsule of the device memory at ``ptr`` (``shape``, ``strides`` in elements),
        kept by ``owner``, for a consumer working on ``stream`` (the DLPack protocol: None = the
        legacy default stream, -1 = no ordering wanted). The consumer's stream waits for the
        producer; when a consumer on a default stream frees the view, the memory goes back to the
        producer's pool once the consumer's work queued until then has passed, without the
        producer's stream waiting for it (a consumer on a stream of its own keeps the view alive
        while its work may read it, as with any DLPack exchange).
        Made by the engine in one call that keeps the GIL: this runs on the training loop's thread
        for every output of every batch."""
        code, bits = _dlpack_type(dtype)
        if self.stream is not None:
            owner = (owner, self.stream)  # the memory's pool arena (by stream) stays valid until it is back
        return _engine.dlpack_view(owner, ptr, shape, strides, code, bits, _KDLCUDA, self._device_id,
                                   1 if stream is None else int(stream),
                                   0 if self._event is None else int(self._event.ptr),
                                   0 if self.stream is None else int(self.stream.ptr))

    def _export_array(self, array: Any, stream: Any) -> Any:
        """``_export`` of a CuPy array."""
        itemsize = array.itemsize
        return self._export(array, int(array.data.ptr), array.dtype, array.shape,
                            tuple(s // itemsize for s in array.strides), stream)

    def _copy_out(self, src: Any, ptr: int, cuda_stream: Any, non_blocking: bool, use_copy_kernel: bool) -> None:
        """Copies the contiguous device array ``src`` to device memory at ``ptr`` on ``cuda_stream``
        (a stream object or handle; None: the legacy default stream), ordered after the producer;
        the host waits for the copy unless ``non_blocking``. ``use_copy_kernel``: a kernel copies
        (not the copy engines)."""
        cp = _cupy()
        handle = 1 if cuda_stream is None else int(getattr(cuda_stream, "ptr", getattr(cuda_stream, "cuda_stream",
                                                                                        cuda_stream)))
        self._order_stream_after(handle)
        raw = 0 if handle == 1 else handle
        rt = cp.cuda.runtime
        if use_copy_kernel:
            dst = cp.ndarray(src.shape, src.dtype, cp.cuda.MemoryPointer(
                cp.cuda.UnownedMemory(int(ptr), src.nbytes, None, self._device_id), 0))
            with cp.cuda.Device(self._device_id), cupy_stream(raw, self._device_id):
                cp.copyto(dst, src)
        else:
            rt.memcpyAsync(int(ptr), src.data.ptr, src.nbytes, rt.memcpyDeviceToDevice, raw)
        if not non_blocking:
            rt.streamSynchronize(raw)


_KDLCUDA = 2
# DLPack's type codes by numpy's kinds (int, uint, float, complex, bool)
_DLPACK_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def _dlpack_type(dtype: np.dtype) -> tuple[int, int]:
    """DLPack's (type code, bits) of a numpy dtype."""
    code = _DLPACK_CODES.get(dtype.kind)
    if code is None:
        raise TypeError(f"DLPack has no type for {dtype}")
    return code, dtype.itemsize * 8


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of ``shape``."""
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


class TensorGPU(_StreamOrdered, _Tensor):
    """One sample in GPU memory (a CuPy array underneath)."""
    __module__ = "penstock.tensors"

    def __init__(self, data: Any, layout: str = "", device_id: int | None = None, stream: Any = None):
        self._init_device_state()
        if isinstance(data, TensorGPU):
            self._array, self.stream, self._event = data._array, data.stream, data._event
            self._source_info = data._source_info
        else:
            self._array = _device_array(data)
            if stream is None:
                self.stream = _current_stream(self._array)
        if stream is not None:
            self.stream = stream
        self._layout = layout_str(layout)
        check_layout(self._layout, self._array.ndim, "TensorGPU")
        self._device_id = self._array.device.id if device_id is None else device_id

    def device_id(self) -> int:
        return self._device_id

    def data_ptr(self) -> int:
        return int(self._array.data.ptr)

    def as_cpu(self) -> TensorCPU:
        """A host copy, taken once the producing work has finished."""
        self._wait_on_host()
        return TensorCPU(_cupy().asnumpy(self._array), self._layout, _source_info=self._source_info)

    def copy_to_external(self, ptr: int, cuda_stream: Any = None, non_blocking: bool = False,
                         use_copy_kernel: bool = False) -> None:
        """Copies the sample into device memory at ``ptr`` on ``cuda_stream`` (ordered after the
        producer; the host waits unless ``non_blocking``)."""
        self._copy_out(_cupy().ascontiguousarray(self._array), ptr, cuda_stream, non_blocking, use_copy_kernel)

    @property
    def __cuda_array_interface__(self) -> dict:
        iface = dict(self._array.__cuda_array_interface__)
        iface["version"] = 3
        iface["stream"] = int(self.stream.ptr) if self.stream is not None and self.stream.ptr else None
        if iface["stream"] is None:
            iface.pop("stream")
        return iface

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        return self._export_array(self._array, stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device_id)  # kDLCUDA

    def __repr__(self) -> str:
        return (f"TensorGPU(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"gpu\",\n    shape={self.shape()})")


class TensorListGPU(_StreamOrdered, _Batch):
    """A batch in GPU memory: a packed CuPy buffer with per-sample shapes and offsets."""
    __module__ = "penstock.tensors"
    _device = "gpu"

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
            arrays = [_device_array(a._array if isinstance(a, TensorGPU) else a) for a in data]
            for i, a in enumerate(arrays[1:], 1):
                if a.ndim != arrays[0].ndim or a.dtype != arrays[0].dtype:
                    raise TypeError(f"TensorListGPU: sample {i} is {a.dtype} with {a.ndim} dims, sample 0 "
                                    f"{arrays[0].dtype} with {arrays[0].ndim}; a batch needs one type and rank")
            shapes = np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), arrays[0].ndim if arrays else 0)
            if arrays:
                with arrays[0].device:  # the batch stays on the samples' GPU
                    buf = cp.concatenate([a.reshape(-1) for a in arrays])
            else:
                buf = cp.zeros((0,), cp.uint8)
            offsets = packed_offsets(shapes)
        else:
            arr = _device_array(data)
            with arr.device:
                arr = cp.ascontiguousarray(arr)
            if arr.ndim == 0:
                raise ValueError("TensorListGPU from a single array needs a leading batch dimension")
            n = arr.shape[0]
            shapes = np.tile(np.array(arr.shape[1:], np.int64), (n, 1)).reshape(n, arr.ndim - 1)
            buf, offsets = arr.reshape(-1), packed_offsets(shapes)
        to_dali_type(buf.dtype)
        self._set(buf, shapes, offsets, layout)
        self._source_info = list(infos) if infos is not None else [""] * len(shapes)
        if stream is not None:
            self.stream = stream
        elif not isinstance(data, TensorListGPU):
            self.stream = _current_stream(buf)
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
        t._source_info = self._source_info[i % len(self)]
        return t

    def at(self, i: int) -> TensorGPU:
        return self[i]

    def _dense_array(self) -> Any:
        shape = self._dense_shape()
        n = int(np.prod(shape, dtype=np.int64))
        if len(self) and not self._is_packed_cached():
            with self._buf.device:  # stacked on the batch's GPU, whichever is current
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
        with self._buf.device:
            src = self._dense_array().reshape(-1) if self.is_dense_tensor() else cp.concatenate(
                [self._sample_array(i).reshape(-1) for i in range(len(self))])
        self._copy_out(src, ptr, cuda_stream, non_blocking, use_copy_kernel)

    @staticmethod
    def broadcast(tensor: Any, num_samples: int) -> "TensorListGPU":
        """A batch of ``num_samples`` copies of one device tensor (ordered after its producer)."""
        cp = _cupy()
        src = tensor if isinstance(tensor, TensorGPU) else TensorGPU(tensor)
        stream = cp.cuda.get_current_stream()
        src._order_stream_after(int(stream.ptr) or 1)
        arr = cp.ascontiguousarray(cp.broadcast_to(src._array, (int(num_samples),) + src._array.shape))
        return TensorListGPU(arr, src._layout, src._device_id, stream)

    @staticmethod
    def from_dlpack_list(list_of_objects: Iterable[Any], layout: str | None = None,
                         contiguous: bool = False) -> "TensorListGPU":
        """A batch of device DLPack objects (torch CUDA tensors, CuPy arrays ...), packed into one
        buffer whatever ``contiguous`` says."""
        cp = _cupy()
        return TensorListGPU([cp.from_dlpack(t) for t in list_of_objects], layout_str(layout))

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.as_tensor().__cuda_array_interface__

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        """The batch as one tensor: a view of its buffer when the samples lie back to back (no
        CuPy array made), else of a stacked copy."""
        shape = self._dense_shape()
        if len(self) and not self._is_packed_cached():
            return self._export_array(self._dense_array(), stream)
        return self._export(self._buf, int(self._buf.data.ptr), self._buf.dtype, shape, _contiguous_strides(shape),
                            stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device_id)
