"""nvCOMP's batched LZ4 decompressor, for decoders.inflate on the GPU, through ctypes.

nvCOMP comes from NVIDIA's ``nvidia-libnvcomp-cu12/13`` wheel (``penstock-data[cuda13]``), its C API
of major version 5 (``nvcomp/lz4.h``): one ``nvcompBatchedLZ4DecompressAsync`` call decompresses every
chunk of a batch on the pipeline's stream, given device arrays of the chunks' addresses and sizes
(uploaded in one copy). nvCOMP reports a chunk it could not decompress, or one that inflated to
another size than its shape's, in per-chunk statuses and sizes: the host reads those back (the one
wait of the call) so that a corrupt chunk is an error of its sample, never data made up.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import threading
from typing import Any

import numpy as np

from .._operator import SampleError

_MAJOR = 5   # the API generation declared below
_SUCCESS = 0


class _DecompressOpts(ctypes.Structure):
    """nvcompBatchedLZ4DecompressOpts_t (passed by value); zeros: the default backend, no bitshuffle."""
    _fields_ = [("backend", ctypes.c_int), ("sort_before_hw_decompress", ctypes.c_int), ("data_type", ctypes.c_int),
                ("bitshuffle_mode", ctypes.c_int), ("reserved", ctypes.c_char * 48)]


class _Properties(ctypes.Structure):
    """nvcompProperties_t: the library's version (nvcomp.h)."""
    _fields_ = [("version", ctypes.c_uint32), ("cuda_version", ctypes.c_uint32)]


_LOCK = threading.Lock()
_LIB: list = []


def library_path() -> str | None:
    """libnvcomp.so of the ``nvidia-libnvcomp`` wheel, or None."""
    try:
        spec = importlib.util.find_spec("nvidia.libnvcomp")
    except ImportError:
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(glob.glob(os.path.join(folder, "lib64", "libnvcomp.so.*")))
        if found:
            return found[0]
    return None


def _library() -> Any:
    with _LOCK:
        if _LIB:
            return _LIB[0]
        path = library_path()
        if path is None:
            raise NotImplementedError("decoders.inflate on the GPU needs nvCOMP: pip install nvidia-libnvcomp-cu13 "
                                      "(or -cu12 for CUDA 12; penstock-data[cuda13] brings it)")
        lib = ctypes.CDLL(path)
        size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
        lib.nvcompGetProperties.argtypes = [ctypes.POINTER(_Properties)]
        props = _Properties()
        if lib.nvcompGetProperties(ctypes.byref(props)) != _SUCCESS or props.version // 1000 != _MAJOR:
            raise NotImplementedError(f"decoders.inflate on the GPU needs nvCOMP {_MAJOR}.x ({path} is version "
                                      f"{props.version // 1000}.{props.version % 1000 // 100})")
        lib.nvcompBatchedLZ4DecompressGetTempSizeAsync.argtypes = [size_t, size_t, _DecompressOpts,
                                                                   ctypes.POINTER(size_t), size_t]
        lib.nvcompBatchedLZ4GetDecompressSizeAsync.argtypes = [ptr, ptr, ptr, size_t, ptr]
        lib.nvcompBatchedLZ4DecompressAsync.argtypes = [ptr, ptr, ptr, ptr, size_t, ptr, size_t, ptr, _DecompressOpts,
                                                        ptr, ptr]
        for name in ("nvcompBatchedLZ4DecompressGetTempSizeAsync", "nvcompBatchedLZ4GetDecompressSizeAsync",
                     "nvcompBatchedLZ4DecompressAsync"):
            getattr(lib, name).restype = ctypes.c_int
        _LIB.append(lib)
        return lib


def _check(status: int, what: str) -> None:
    if status != _SUCCESS:
        raise RuntimeError(f"decoders.inflate: nvCOMP's {what} failed with status {status}")


def decompress_lz4(ws: Any, src: Any, src_starts: np.ndarray, src_sizes: np.ndarray, dst: Any,
                   dst_starts: np.ndarray, dst_sizes: np.ndarray, check_output_size: bool) -> None:
    """Chunk c (bytes [src_starts[c], + src_sizes[c]) of device array ``src``) inflated into bytes
    [dst_starts[c], + dst_sizes[c]) of device array ``dst``, every chunk in one call on ``ws``'s stream.
    A chunk that fails, or inflates to another size, raises SampleError(chunk)."""
    n = len(src_starts)
    if n == 0:
        return
    lib = _library()
    gpu, cp = ws.gpu, ws.gpu.cp
    opts = _DecompressOpts()
    max_chunk, total = int(dst_sizes.max()), int(dst_sizes.sum())
    temp_bytes = ctypes.c_size_t(0)
    _check(lib.nvcompBatchedLZ4DecompressGetTempSizeAsync(n, max_chunk, opts, ctypes.byref(temp_bytes), total),
           "temporary size query")
    src_ptrs, src_bytes, dst_ptrs, dst_bytes = gpu.upload_params(
        (src.data.ptr + src_starts).astype(np.uint64), src_sizes.astype(np.uint64),
        (dst.data.ptr + dst_starts).astype(np.uint64), dst_sizes.astype(np.uint64))
    actual = gpu.empty(n, np.uint64)
    statuses = gpu.empty(n, np.int32)
    temp = gpu.empty(max(1, temp_bytes.value), np.uint8)
    stream = gpu.stream.ptr
    with gpu:
        if check_output_size:  # the sizes the chunks' headers promise, before anything is written
            _check(lib.nvcompBatchedLZ4GetDecompressSizeAsync(src_ptrs.data.ptr, src_bytes.data.ptr,
                                                               actual.data.ptr, n, stream), "size query")
            _raise_for(cp.asnumpy(actual) > dst_sizes, "inflates to more bytes than its shape and dtype hold",
                       cp.asnumpy(actual), dst_sizes)
        _check(lib.nvcompBatchedLZ4DecompressAsync(src_ptrs.data.ptr, src_bytes.data.ptr, dst_bytes.data.ptr,
                                                   actual.data.ptr, n, temp.data.ptr, temp_bytes.value,
                                                   dst_ptrs.data.ptr, opts, statuses.data.ptr, stream),
               "LZ4 decompression")
        status, sizes = cp.asnumpy(statuses), cp.asnumpy(actual)
    _raise_for(status != _SUCCESS, "is not a valid LZ4 block (nvCOMP could not decompress it)", sizes, dst_sizes)
    _raise_for(sizes != dst_sizes, "inflates to another size than its shape and dtype need", sizes, dst_sizes)


def _raise_for(bad: np.ndarray, why: str, sizes: np.ndarray, want: np.ndarray) -> None:
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise SampleError(c, f"LZ4 chunk {why} ({int(sizes[c])} bytes; its shape and dtype need {int(want[c])})")
