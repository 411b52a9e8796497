"""Kernel launches, host -> device copies and events queued on a pipeline's stream through the engine.

Each is a driver call of microseconds, and the driver's context lock serializes them with the
training model's launches. A pipeline thread lets go of the GIL for its calls: holding it while it
waits for that lock, behind a torch thread launching the model's kernels, made the model's threads
wait for both. On an H100 beside a training ResNet-18 (2026-12-07, py-spy's GIL samples) the
pipeline's threads held the GIL 89 us a batch in the 1 KB copy of the labels and 109 us in the fused
resize's one call of launches. The call then costs the thread one wait to take the GIL back, bounded
by the switch interval a GPU pipeline sets (_switch_interval.py), where CuPy let go of it around
each of a batch's dozens of calls, at Python's 5 ms interval then. The thread that consumes the
batches keeps the GIL (it would wait for the pipeline's Python to get it back)."""
from __future__ import annotations

import ctypes
import struct
import threading
from typing import Any, Sequence

import numpy as np

from .. import _consumer, _engine

# The consumer's thread releases the GIL only for host copies of at least this many bytes: at about
# 10 GB/s, 1 MiB is ~100 us, long enough for other threads' Python to run meanwhile.
RELEASE_GIL_FROM = 1 << 20


def _releases_gil() -> bool:
    """Whether this thread lets go of the GIL for a driver call (the module's docstring)."""
    return threading.get_native_id() != _consumer.consumer()


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
                              0 if stream is None else int(stream.ptr), params, offsets, _releases_gil())


def launch_kernels(kernels: Sequence[Kernel], grids: np.ndarray, block: int, stream: Any, slots: np.ndarray) -> None:
    """Launches ``kernels[l]`` with ``grids[l]`` blocks of ``block`` threads, in order, on ``stream`` (a
    grid of 0 is skipped), in one engine call: launch l's parameters are row l of ``slots``, one int64
    per parameter (pointers and integers; a narrower integer in its slot's low bytes)."""
    functions = np.array([k.kernel.ptr for k in kernels], np.uint64)
    _engine.launch_kernels(functions, np.ascontiguousarray(grids, np.int64), int(block), int(stream.ptr),
                           np.ascontiguousarray(slots, np.int64), _releases_gil())


def record_event(event: Any, stream: Any) -> None:
    """Records ``event`` (CuPy's, or anything with the CUevent as ``ptr``) after the work queued on ``stream``."""
    _engine.record_event(int(event.ptr), int(stream.ptr), _releases_gil())


def wait_event(stream: Any, event: Any) -> None:
    """Makes ``stream`` wait for ``event`` before the work queued on it afterwards."""
    _engine.wait_event(int(stream.ptr), int(event.ptr), _releases_gil())


def pinned_view(block: Any) -> np.ndarray:
    """A uint8 numpy array over a pinned staging block (``ptr``, ``size``)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * block.size).from_address(block.ptr))


def copy_to_device(dst: int, host: np.ndarray, staging: int, stream: Any) -> None:
    """Copies the contiguous ``host`` into pinned ``staging`` and queues the copy from there to
    device address ``dst`` on ``stream``."""
    _engine.copy_to_device(int(dst), host, int(staging), int(stream.ptr), 0 if _releases_gil() else RELEASE_GIL_FROM)


def copy_ranges_to_device(dsts: np.ndarray, staging: Any, offsets: np.ndarray, sizes: np.ndarray, stream: Any) -> None:
    """Queues on ``stream`` the copies of ranges of the pinned block ``staging`` (``ptr``, ``size``):
    range i, ``sizes[i]`` bytes at ``offsets[i]``, to device address ``dsts[i]``, in one engine call."""
    _engine.copy_ranges_to_device(np.ascontiguousarray(dsts, np.uint64), int(staging.ptr), int(staging.size),
                                  np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(sizes, np.int64),
                                  int(stream.ptr))
