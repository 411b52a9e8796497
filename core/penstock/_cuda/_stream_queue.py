"""Kernel launches, host -> device copies and events queued on a pipeline's stream through the engine, with
the GIL held.

CuPy releases the GIL around every driver call. Each such call is microseconds, but getting the GIL
back takes up to Python's switch interval (5 ms) while another thread runs Python, which a training
loop's thread does most of the time: a batch's few dozen launches and copies then took the GPU stages
longer than the batch's decoding, and the model waited for them. Holding the GIL for a call of
microseconds costs the other threads only those microseconds."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Sequence

import numpy as np

from .. import _engine

# Host copies of at least this many bytes release the GIL: at about 10 GB/s, 1 MiB is ~100 us, long
# enough for other threads' Python to run meanwhile, and such copies are a few per batch.
RELEASE_GIL_FROM = 1 << 20


def _dim3(dims: Any) -> tuple[int, int, int]:
    dims = tuple(int(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    return (dims + (1, 1, 1))[:3]


def pack_parameters(args: Sequence[Any]) -> tuple[bytes, list[int]]:
    """The kernel parameters' bytes, each aligned to its size, and their offsets, as CuPy passes them:
    a device array by its address, a numpy scalar as its type, a Python int as int64, a float as
    double, a bool as one byte."""
    packed = bytearray()
    offsets = []
    for a in args:
        if isinstance(a, np.generic):
            raw = a.tobytes()
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):  # a device array
            raw = struct.pack("<Q", int(a.data.ptr))
        elif isinstance(a, bool):
            raw = struct.pack("<?", a)
        elif isinstance(a, int):
            raw = struct.pack("<q" if a < 0 else "<Q", a)
        elif isinstance(a, float):
            raw = struct.pack("<d", a)
        else:
            raise TypeError(f"a kernel parameter must be a device array or a scalar, not {type(a).__name__}")
        align = min(len(raw), 8)
        packed += bytes(-len(packed) % align)
        offsets.append(len(packed))
        packed += raw
    return bytes(packed), offsets


class Kernel:
    """A compiled kernel (CuPy's RawKernel underneath), called as CuPy's is:
    ``kernel(grid, block, args, stream=stream)``, and launched by the engine with the GIL held."""
    __slots__ = ("raw",)

    def __init__(self, raw: Any):
        self.raw = raw

    @property
    def kernel(self) -> Any:
        """The CUfunction object on the current device (its ``ptr``)."""
        return self.raw.kernel

    def __call__(self, grid: Any, block: Any, args: Sequence[Any], stream: Any = None, shared_mem: int = 0) -> None:
        params, offsets = pack_parameters(args)
        _engine.launch_kernel(self.raw.kernel.ptr, _dim3(grid), _dim3(block), int(shared_mem),
                              0 if stream is None else int(stream.ptr), params, offsets)


def launch_kernels(kernels: Sequence[Kernel], grids: np.ndarray, block: int, stream: Any, slots: np.ndarray) -> None:
    """Launches ``kernels[l]`` with ``grids[l]`` blocks of ``block`` threads, in order, on ``stream`` (a
    grid of 0 is skipped), in one engine call: launch l's parameters are row l of ``slots``, one int64
    per parameter (pointers and integers; a narrower integer in its slot's low bytes)."""
    functions = np.array([k.kernel.ptr for k in kernels], np.uint64)
    _engine.launch_kernels(functions, np.ascontiguousarray(grids, np.int64), int(block), int(stream.ptr),
                           np.ascontiguousarray(slots, np.int64))


def record_event(event: Any, stream: Any) -> None:
    """Records ``event`` (CuPy's, or anything with the CUevent as ``ptr``) after the work queued on ``stream``."""
    _engine.record_event(int(event.ptr), int(stream.ptr))


def wait_event(stream: Any, event: Any) -> None:
    """Makes ``stream`` wait for ``event`` before the work queued on it afterwards."""
    _engine.wait_event(int(stream.ptr), int(event.ptr))


def pinned_view(block: Any) -> np.ndarray:
    """A uint8 numpy array over a pinned staging block (``ptr``, ``size``)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * block.size).from_address(block.ptr))


def copy_to_device(dst: int, host: np.ndarray, staging: int, stream: Any) -> None:
    """Copies the contiguous ``host`` into pinned ``staging`` and queues the copy from there to
    device address ``dst`` on ``stream``."""
    _engine.copy_to_device(int(dst), host, int(staging), int(stream.ptr), RELEASE_GIL_FROM)


def copy_ranges_to_device(dsts: np.ndarray, staging: Any, offsets: np.ndarray, sizes: np.ndarray, stream: Any) -> None:
    """Queues on ``stream`` the copies of ranges of the pinned block ``staging`` (``ptr``, ``size``):
    range i, ``sizes[i]`` bytes at ``offsets[i]``, to device address ``dsts[i]``, in one engine call."""
    _engine.copy_ranges_to_device(np.ascontiguousarray(dsts, np.uint64), int(staging.ptr), int(staging.size),
                                  np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(sizes, np.int64),
                                  int(stream.ptr))
