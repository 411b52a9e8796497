"""The per-pipeline device context: its device, its one CUDA stream, the batch kernels that run on
it, and host -> device copies through the process's pinned staging blocks (_pools)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import _engine
from .._environment import one_of
from ..tensors import TensorListGPU
from ._batch_arena import BatchArena
from ._compile import compiled
from ._pools import claim_device_reserve, pinned
from ._stream_queue import (Kernel, copy_ranges_to_device, copy_to_device, launch_kernels, pinned_view,
                            record_event, wait_event)
from ._runtime import require
from .kernels import GpuKernels


STREAM_PRIORITY_ENV = "PENSTOCK_STREAM_PRIORITY"


def stream_priority(device_id: int,
                    priority_range: Callable[[int], tuple[int, int]] = _engine.stream_priority_range) -> int:
    """The CUDA priority of the pipelines' streams (``PENSTOCK_STREAM_PRIORITY``): ``high``, the
    default, is the device's greatest; ``normal`` is CUDA's default, the one a framework's streams
    have. The pipeline's GPU work is short but on the batch's critical path (the decoder's next batch
    waits for the gathers and resizes of the last): at CUDA's default it queues behind the model's
    kernels, at the greatest priority the SMs take it first. Beside ResNet-18 on an H200 the
    training runs gained 8.6% and 4.1% from it in two calls (14,920 img/s against 13,738; 11,614
    against 11,161; alternating rounds), beside ResNet-50 0.7%."""
    if one_of(STREAM_PRIORITY_ENV, "high", ("high", "normal")) == "normal":
        return 0
    _least, greatest = priority_range(device_id)  # (CuPy has no call for it)
    return int(greatest)


def _size_class(count: int) -> int:
    """``count`` rounded up to one of eight steps per power of two (beyond 2**16): batches vary in
    size from one iteration to the next, and a pooled block freed by one then fits the next."""
    if count <= 1 << 16:
        return count
    step = 1 << (count.bit_length() - 4)
    return -(-count // step) * step


class DeviceContext:
    """One pipeline's GPU: the device and the stream every GPU operator of the pipeline runs on. Host
    data reaches the device through pinned staging blocks (_pools.pinned), each reused only once the
    copy that read it has finished on the stream (an event), so the host never waits for the GPU to
    stage data. Memory preallocated for the device (backend.PreallocateDeviceMemory) goes to the
    stream's part of the pool when the context starts."""

    def __init__(self, device_id: int, stream: Any = None):
        cp = require()
        self.cp = cp
        self.device_id = int(device_id)
        count = cp.cuda.runtime.getDeviceCount()
        if not 0 <= self.device_id < count:
            raise RuntimeError(f"device_id {device_id} is out of range: this machine has {count} CUDA device(s)")
        self.device = cp.cuda.Device(self.device_id)
        with self.device:  # a stream of its own, unless given one (the dynamic mode's contexts share theirs)
            self.stream = (cp.cuda.Stream(non_blocking=True, priority=stream_priority(self.device_id))
                           if stream is None else stream)
        claim_device_reserve(cp, self.device_id, self.stream)
        self._closers: list = []
        self.kernels = GpuKernels(self)

    def new_batch(self, shapes: np.ndarray, dtype: Any, layout: str = "", source_info: Any = None) -> Any:
        """An uninitialized packed batch in device memory, produced on this context's stream."""
        shapes = np.ascontiguousarray(shapes, np.int64)
        total = int(_engine.shape_volumes(shapes).sum())  # numpy's prod would give the GIL away
        buf = self.empty(total, dtype)
        tl = TensorListGPU._from_packed(buf, shapes, None, layout, source_info)
        tl.stream = self.stream
        return tl

    def batch_arena(self) -> BatchArena:
        """Device memory of its own for one operator's large batches of varying size (_batch_arena)."""
        return BatchArena(self)

    def empty(self, count: int, dtype: Any) -> Any:
        """An uninitialized 1-D device array of ``count`` elements from this stream's pool, its
        block sized to a size class (``_size_class``)."""
        with self:
            return self.cp.empty(_size_class(int(count)), np.dtype(dtype))[:count]

    def __enter__(self) -> "DeviceContext":
        self.device.__enter__()
        self.stream.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stream.__exit__(*exc)
        self.device.__exit__(*exc)

    # -- host -> device --------------------------------------------------------------------
    @staticmethod
    def reserve_staging(nbytes: int) -> None:
        """Pins ``nbytes`` of staging memory ahead of the first copies."""
        pinned.reserve(int(nbytes))

    def upload(self, host: np.ndarray, out: Any = None) -> Any:
        """Copies a host array to the device on this context's stream (through pinned staging)."""
        host = np.ascontiguousarray(host)
        if out is None:
            out = self._device_like(host)
        if host.nbytes:
            self._copy_through(pinned.take(host.nbytes), host, out)
        return out

    def staging(self, nbytes: int, block_bytes: int = 0) -> Staged:
        """Pinned memory of ``nbytes`` to make host data in, then upload without a copy on the host, in
        a block of at least ``block_bytes``: a caller whose copies vary in size asks for blocks of one
        size, so that a block one copy gave back serves the next (``_pools.PinnedPool.take``)."""
        return Staged(self, pinned.take(max(nbytes, block_bytes)), nbytes)

    @staticmethod
    def pinned_blocks() -> int:
        """How many times the staging pool has pinned memory so far (``PinnedPool.pinned_blocks``)."""
        return pinned.pinned_blocks()

    def _device_like(self, host: np.ndarray) -> Any:
        with self:  # allocations belong to the stream that uses them (CuPy's pool is per stream)
            return self.cp.empty(host.shape, host.dtype)

    def _copy_through(self, blk: Any, host: np.ndarray, out: Any) -> None:
        """Queues the copy of contiguous ``host`` to ``out`` through pinned block ``blk`` (host's bytes
        copied in first unless they are the block's own), then hands the block back."""
        self._copies_from(blk, lambda: copy_to_device(out.data.ptr, host.reshape(-1).view(np.uint8), blk.ptr,
                                                      self.stream))

    def _copies_from(self, blk: Any, queue: Callable[[], None]) -> None:
        """Runs ``queue`` (copies from pinned block ``blk`` queued on the stream) with the stream's device
        current, then hands the block back with an event after them: lent again once they are done."""
        copied = None
        try:
            with self.device:
                queue()
                copied = blk.copy_events.get(self.device_id)
                if copied is None:
                    copied = blk.copy_events[self.device_id] = self.cp.cuda.Event(block=False, disable_timing=True)
                record_event(copied, self.stream)
        finally:
            pinned.give_back(blk, copied)

    def upload_params(self, *arrays: np.ndarray) -> list:
        """Several small host arrays (per-sample kernel parameters) in one copy; returns device
        arrays (views of one buffer) in the same order."""
        parts = [np.ascontiguousarray(a) for a in arrays]
        packed, offsets = _engine.pack_parts(parts, 16)  # numpy's zeroing and copies would give the GIL away
        memory = self.upload(packed).data
        # one array each straight over its bytes: a slice, a view and a reshape (three of CuPy's arrays
        # each) held a pipeline thread's GIL ~100 us a batch of the fused resize's (py-spy's samples on
        # an H100's host)
        ndarray = self.cp.ndarray
        return [ndarray(a.shape, a.dtype, memory + off) for a, off in zip(parts, offsets.tolist())]

    @staticmethod
    def address(array: Any) -> int:
        """The device address of a device array's first element (a kernel parameter by address)."""
        return int(array.data.ptr)

    def launch_kernels(self, kernels: Sequence[Kernel], grids: np.ndarray, block: int, slots: np.ndarray,
                       signature: str | Sequence[str]) -> None:
        """Queues ``kernels[l]`` over ``grids[l]`` blocks of ``block`` threads on the stream, in order
        (a grid of 0 is skipped), in one engine call: row l of ``slots`` holds launch l's parameters,
        one int64 each, of the kinds in ``signature`` ('p' an address, 'i' an int32, 'q' an int64),
        one for every launch or one per launch; a row may be wider than a launch's parameters (the
        driver reads as many as the kernel takes)."""
        signatures = [signature] if isinstance(signature, str) else signature
        if max(map(len, signatures)) > slots.shape[1]:
            raise ValueError(f"launch_kernels: {slots.shape[1]} parameters per launch for the signature {signature!r}")
        launch_kernels(kernels, grids, block, self.stream, slots)

    def on_close(self, release: Any) -> None:
        """``release()`` drops resources that use the stream (codec objects, images in flight);
        it runs at close, after the stream's work finished and before the stream goes away."""
        self._closers.append(release)

    def close(self) -> None:
        """Waits for the stream's work, then releases what was registered with on_close."""
        closers, self._closers = self._closers, []
        if closers:
            self.stream.synchronize()
        for release in closers:
            release()

    def source_kernel(self, code: str, name: str) -> Any:
        """Kernel ``name`` of CUDA source ``code`` compiled at run time for this device (custom
        operators' kernels); called as ``kernel(grid, block, args, stream=...)``."""
        return Kernel(compiled(code, self.device_id).get_function(name))

    def record(self) -> Any:
        """An event after everything queued on the stream so far (recorded with the stream's device
        current, whichever thread asks: events belong to a device)."""
        with self.device:
            event = self.cp.cuda.Event(block=False, disable_timing=True)
            record_event(event, self.stream)
        return event


class Staged:
    """A pinned staging block lent to be filled (``view``, its first ``nbytes``), then ``upload``-ed:
    host data made there (decoded pixels) reach the device without a copy on the host. ``give_back``
    returns it unused."""

    def __init__(self, ctx: DeviceContext, block: Any, nbytes: int):
        self._ctx, self._block = ctx, block
        self.view = pinned_view(block)[:nbytes]

    def holds(self, host: np.ndarray) -> bool:
        """Whether ``host`` is data at the start of the block (what ``upload`` takes)."""
        return self._block is not None and host.ctypes.data == self._block.ptr and host.nbytes <= self._block.size

    def upload(self, host: np.ndarray) -> Any:
        """``host`` (data at the block's start, ``holds``) as a new device array; the block goes back."""
        if not self.holds(host) or not host.flags.c_contiguous:
            raise ValueError("Staged.upload: the data is not at the start of its staging block")
        block, self._block = self._block, None
        out = self._ctx._device_like(host)
        if host.nbytes:
            self._ctx._copy_through(block, host, out)
        else:
            pinned.give_back(block, None)
        return out

    def copy_into(self, dsts: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, after: Any = None) -> None:
        """Queues the copies of the block's ranges (``sizes[i]`` bytes at ``offsets[i]``) to device
        addresses ``dsts[i]``, after the event ``after`` (None: after the stream's work so far), in one
        engine call; the block goes back."""
        block, self._block = self._block, None
        if block is None:
            raise ValueError("Staged.copy_into: the staging was uploaded or given back already")
        ctx = self._ctx

        def queue() -> None:
            if after is not None:
                wait_event(ctx.stream, after)
            copy_ranges_to_device(dsts, block, offsets, sizes, ctx.stream)
        ctx._copies_from(block, queue)

    def give_back(self) -> None:
        """Returns the block unused (nothing was queued from it)."""
        if self._block is not None:
            pinned.give_back(self._block, None)
            self._block = None
