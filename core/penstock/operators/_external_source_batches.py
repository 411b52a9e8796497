"""What an external source gave (returned, or fed with ``feed_input``) as a batch: per-sample arrays
packed with one native copy, copies that never alias the source's memory, and GPU data as a device
batch ordered after the user's stream; then the declared type, dimensions and layout checked."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _engine
from .._batch import empty_batch, host_buffer
from .._registry import ArgumentValueError
from .._sources import gpu_data_error, host_array, sample_arrays, sample_shapes
from ..tensors import TensorCPU, TensorListCPU, TensorListGPU
from ..tensors._device import cupy_stream
from ..types import DALIDataType, to_dali_type


def _is_device_data(d: Any) -> bool:
    """CUDA arrays: CuPy, torch CUDA tensors, anything with __cuda_array_interface__ or a CUDA
    DLPack device."""
    if isinstance(d, TensorListGPU) or hasattr(d, "__cuda_array_interface__"):
        return True
    device = getattr(d, "__dlpack_device__", None)
    return device is not None and not isinstance(d, (np.ndarray, TensorCPU, TensorListCPU)) and device()[0] in (2, 3)


def _stream_handle(stream: Any) -> int:
    """A raw CUDA stream handle from a CuPy/torch stream or int (None: the legacy default stream)."""
    if stream is None:
        return 1
    if isinstance(stream, int):
        return stream
    return int(getattr(stream, "ptr", getattr(stream, "cuda_stream", 0)))


def device_batch(data: Any, label: str, copy: bool, cuda_stream: Any, use_copy_kernel: bool) -> TensorListGPU:
    """GPU data as a device batch. The user's stream (``cuda_stream``) produced it: copies are
    queued on that stream, and the batch carries an event the pipeline's stream waits for."""
    import cupy as cp
    handle = _stream_handle(cuda_stream)
    stream = cupy_stream(0 if handle == 1 else handle)
    with stream:
        if isinstance(data, TensorListGPU):
            tl = TensorListGPU._from_packed(data._buf.copy() if copy else data._buf, data._shapes.copy(),
                                            data._offsets.copy(), data._layout, data._source_info)
        elif isinstance(data, (list, tuple)):
            tl = TensorListGPU([cp.asarray(d) for d in data])  # packing copies
        else:
            arr = cp.asarray(data)
            if arr.ndim == 0:
                raise RuntimeError(f"{label}: the source gave a 0-D array; a batch needs a leading sample "
                                   "dimension (or return a list of samples)")
            if copy:
                dst = cp.empty_like(arr, order="C")
                if use_copy_kernel or not arr.flags.c_contiguous:
                    dst[...] = arr  # an element-wise kernel
                else:
                    rt = cp.cuda.runtime
                    rt.memcpyAsync(dst.data.ptr, arr.data.ptr, arr.nbytes, rt.memcpyDeviceToDevice, stream.ptr)
                arr = dst
            tl = TensorListGPU(arr)
        tl._event = stream.record()
    return tl


def pack_samples(pool: Any, samples: Sequence[Any], label: str) -> TensorListCPU:
    """One packed batch from per-sample arrays: a single native copy with the GIL released."""
    arrays = sample_arrays(samples, label)
    if not arrays:
        return TensorListCPU([])
    dtype = arrays[0].dtype
    out = empty_batch(sample_shapes(arrays), dtype)
    _engine.gather(pool, arrays, out._offsets * dtype.itemsize, out._buf.view(np.uint8))
    return out


def _copied(pool: Any, tl: TensorListCPU) -> TensorListCPU:
    buf = host_buffer(len(tl._buf), tl._buf.dtype)
    _engine.copy(pool, tl._buf, buf)
    out = TensorListCPU._from_packed(buf, tl._shapes.copy(), tl._offsets.copy(), tl._layout, tl._source_info)
    out._packed = tl._packed
    return out


def to_batch(data: Any, label: str, pool: Any, copy: bool, device: str = "cpu", cuda_stream: Any = None,
             use_copy_kernel: bool = False) -> Any:
    """What a source returned as a batch; ``copy``: never alias the source's memory."""
    if device == "gpu" and (_is_device_data(data) or (isinstance(data, (list, tuple)) and data
                                                        and all(_is_device_data(d) for d in data))):
        return device_batch(data, label, copy, cuda_stream, use_copy_kernel)
    if isinstance(data, TensorListGPU):
        raise gpu_data_error(label)
    if isinstance(data, TensorListCPU):
        return _copied(pool, data) if copy else data
    if isinstance(data, (list, tuple)):
        infos = [d._source_info if isinstance(d, TensorCPU) else "" for d in data]
        tl = pack_samples(pool, data, label)  # packing copies
        tl._source_info = infos
        return tl
    arr = host_array(data, label)
    if arr.ndim == 0:
        raise RuntimeError(f"{label}: the source gave a 0-D array; a batch needs a leading sample dimension "
                           "(or return a list of samples)")
    to_dali_type(arr.dtype)
    if not arr.flags.c_contiguous:
        return TensorListCPU(np.ascontiguousarray(arr))  # already a copy
    tl = TensorListCPU(arr)
    return _copied(pool, tl) if copy else tl


def check_batch(tl: TensorListCPU, layout: str | None, dtype: Any, ndim: int | None, label: str) -> TensorListCPU:
    """The declared dtype/ndim/layout hold for the batch (DALI raises RuntimeError otherwise)."""
    if dtype is not None and tl.dtype != to_dali_type(dtype):
        raise RuntimeError(f"{label}: expected data of type {DALIDataType(to_dali_type(dtype))} and got "
                           f"{tl.dtype}")
    if ndim is not None and tl.ndim() != ndim:
        raise RuntimeError(f"{label}: expected data with {ndim} dimensions and got {tl.ndim()}-D samples")
    if layout:
        if len(layout) != tl.ndim():
            raise ArgumentValueError(f"{label}: layout '{layout}' cannot describe {tl.ndim()}-D samples "
                                     f"(it has {len(layout)} dimensions)")
        tl.set_layout(layout)
    return tl
