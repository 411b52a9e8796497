"""User data as penstock batches: numpy, torch, CuPy and JAX arrays (through the array interfaces
and DLPack, without copying where the memory allows), penstock's own tensors, and Python scalars
and nested lists (typed as DALI types them: int -> int32, float -> float32, bool -> bool)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import _cuda
from ...tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU
from ...tensors._host import as_host_array


def is_array(obj: Any) -> bool:
    """Whether ``obj`` is array data of another library (or penstock's own tensors)."""
    return isinstance(obj, (np.ndarray, np.generic, TensorCPU, TensorGPU)) or any(
        hasattr(obj, a) for a in ("__array_interface__", "__cuda_array_interface__", "__dlpack__", "__array__"))


def on_gpu(obj: Any) -> bool:
    if isinstance(obj, (TensorGPU, TensorListGPU)) or hasattr(obj, "__cuda_array_interface__"):
        return True
    if hasattr(obj, "__dlpack_device__"):
        return int(obj.__dlpack_device__()[0]) in (2, 13)  # kDLCUDA, kDLCUDAManaged
    return False


def python_array(data: Any) -> np.ndarray:
    """Python scalars or nested sequences as an array of DALI's default types."""
    arr = np.asarray(data)
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype.kind == "i" and arr.dtype != np.int32:
        if arr.size == 0 or (arr.min() >= -2 ** 31 and arr.max() < 2 ** 31):
            return arr.astype(np.int32)
        return arr.astype(np.int64)
    if arr.dtype.kind in "USO":
        raise TypeError(f"cannot make a tensor of {type(data).__name__} data ({arr.dtype}); "
                        "penstock tensors hold numbers and booleans")
    return arr


def array_of(data: Any) -> tuple[Any, bool, bool]:
    """(array, on the GPU, shares the caller's memory) of one sample's data."""
    if isinstance(data, TensorCPU):
        return data._array, False, True
    if isinstance(data, TensorGPU):
        return data._array, True, True
    if on_gpu(data):
        cp = _cuda.require("GPU data in the dynamic mode")
        return cp.asarray(data) if hasattr(data, "__cuda_array_interface__") else cp.from_dlpack(data), True, True
    if isinstance(data, np.ndarray):
        return data, False, True
    if isinstance(data, np.generic):
        return np.asarray(data), False, False
    if hasattr(data, "__dlpack__") or hasattr(data, "__array_interface__") or hasattr(data, "__array__"):
        try:
            return as_host_array(data), False, True
        except (BufferError, TypeError):  # read-only or unusual DLPack producers: through __array__
            return np.array(data), False, False
    return python_array(data), False, False


def to_device(arr: Any, gpu: bool, want_gpu: bool) -> Any:
    if gpu == want_gpu:
        return arr
    cp = _cuda.require("GPU data in the dynamic mode")
    return cp.asarray(arr) if want_gpu else cp.asnumpy(arr)


def single(arr: Any, gpu: bool, layout: str, copy: bool) -> Any:
    """A batch of one sample holding ``arr`` (a view unless ``copy`` or the array is strided)."""
    if gpu:
        cp = _cuda.require("GPU data in the dynamic mode")
        arr = cp.array(arr, copy=True) if copy else arr
        return TensorListGPU(arr[None], layout)
    arr = np.array(arr, copy=True) if copy else arr
    return TensorListCPU(arr[np.newaxis], layout)


def stacked(samples: Sequence[Any], gpu: bool, layout: str) -> Any:
    """A batch of the given per-sample arrays (copied into one buffer)."""
    cls = TensorListGPU if gpu else TensorListCPU
    return cls(list(samples), layout)


def leading_dim(arr: Any, gpu: bool, layout: str) -> Any:
    """A batch whose samples are the slices of ``arr`` along its first dimension (a view)."""
    if arr.ndim == 0:
        raise ValueError("a batch made of one array needs a leading (sample) dimension; got a scalar")
    return (TensorListGPU if gpu else TensorListCPU)(arr, layout)
