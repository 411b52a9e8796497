"""Device memory of its own for one operator's output batches when they are large and vary in size
(the mixed decoders' windows of high-resolution photographs).

In the shared pool a batch larger than every free block takes a new block beside them, and the pool
keeps the others: batches of random crops, a few GB each and each a different size, left it holding
about twice what they used (on an H200, a train pipeline on high-resolution photographs: 8.6 GB
held for at most 4.4 GB in use). Here every block is as large as the largest batch so far (grown by
the device growth factor, as DALI's buffers grow), so a block one batch freed takes the next, and no
other allocation splits it. When a batch outgrows the blocks, the free ones go back to the device
before a larger one is made (freeing device memory synchronizes the device: rare after the first
batches), and a block that comes back smaller than the current size later goes back too.

A block is free again once its batch and every view of it are gone, and an event is recorded on
the pipeline's stream then: every reader of the batch queued its work there before it let the batch
go. Its next batch is written after that event (the mixed decoders' hardware engines, which write
without waiting for their stream, are held on the host until it passes), not after everything the
stream holds when that batch is made: by then a block freed batches ago needs no wait at all.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .. import _engine
from ..tensors import TensorListGPU
from ._pools import grown, hold_unused, own_device_memory, settings


class _Lent:
    """The owner of one batch's view of a block: when the last view goes, the block is free."""
    __slots__ = ("__weakref__",)


class BatchArena:
    """Blocks of device memory lent to one operator's batches on ``ctx`` (a DeviceContext)."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self._size = 0  # bytes of a block
        self._free: list[Any] = []  # blocks (cupy.cuda.Memory) no batch uses
        self._freed_at: dict[int, Any] = {}  # a free block's address -> the event recorded when it was freed
        self._held = 0  # bytes of the blocks made and not yet dropped, lent or free
        # reentrant: the garbage collector may free a batch (and call _give_back) on a thread that
        # is inside _take
        self._lock = threading.RLock()
        hold_unused(self)

    def new_batch(self, shapes: np.ndarray, dtype: Any, layout: str = "",
                  source_info: Any = None) -> tuple[Any, Any]:
        """An uninitialized packed batch in one of the arena's blocks, produced on the context's
        stream, and the event after which its memory may be written: the work queued on the block's
        last batch has passed then (None: a new block)."""
        shapes = np.ascontiguousarray(shapes, np.int64)
        dtype = np.dtype(dtype)
        count = int(_engine.shape_volumes(shapes).sum())  # numpy's prod would give the GIL away
        block = self._take(max(count * dtype.itemsize, 1))
        with self._lock:
            freed = self._freed_at.pop(block.ptr, None)
        cp = self.ctx.cp
        owner = _Lent()
        # (not at exit: the block goes with the process, and the stream may be gone)
        weakref.finalize(owner, self._give_back, block).atexit = False
        memory = cp.cuda.UnownedMemory(block.ptr, block.size, owner, self.ctx.device_id)
        buf = cp.ndarray((count,), dtype, cp.cuda.MemoryPointer(memory, 0))
        tl = TensorListGPU._from_packed(buf, shapes, None, layout, source_info)
        tl.stream = self.ctx.stream
        return tl, freed

    def _take(self, nbytes: int) -> Any:
        with self._lock:
            outgrown: list[Any] = []
            if nbytes > self._size:  # the free blocks are too small for this batch and every later one
                outgrown, self._free = self._free, []
                self._size = grown(self._size, nbytes, settings.device_growth)
            size = self._size
            block = None
            while self._free and block is None:
                block = self._free.pop()
                if block.size < nbytes:  # given back in the middle of a growth (the collector, on this thread)
                    outgrown.append(block)
                    block = None
            self._held -= sum(b.size for b in outgrown)
            for b in outgrown:
                self._freed_at.pop(b.ptr, None)
        del outgrown  # freed before the larger block is made, outside the lock (freeing synchronizes the device)
        if block is None:
            with self.ctx.device:
                block = own_device_memory(self.ctx.cp, size)
            with self._lock:
                self._held += block.size
        return block

    def _give_back(self, block: Any) -> None:
        with self._lock:
            if block.size >= self._size:
                self._free.append(block)
                self._freed_at[block.ptr] = self.ctx.record()  # after the work its batch's readers queued
            else:  # the blocks have grown since it was made: it goes back to the device with this call
                self._held -= block.size

    def release_unused(self) -> None:
        """Frees the blocks no batch uses."""
        with self._lock:
            unused, self._free = self._free, []
            self._held -= sum(b.size for b in unused)
            self._freed_at.clear()
        del unused  # outside the lock, as in _take

    def held_bytes(self) -> int:
        """Bytes of device memory the arena holds: its blocks, lent or free."""
        with self._lock:
            return self._held
