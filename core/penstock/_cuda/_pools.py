"""The process's memory pools and the controls DALI's backend offers over them (``penstock.backend``):

- pinned host memory: one pool of staging blocks shared by every pipeline's host -> device copies
  (pinned memory is costly to allocate and portable across devices). A block is lent to a copy that
  fills at least the *host shrink threshold* of it (small copies do not hold large blocks), and a
  copy larger than every block gets a new one grown by the *host growth factor* over the largest;
  preallocated memory (``preallocate_pinned``) is carved into blocks before any more is pinned;
- device memory: CuPy's pool, whose free blocks belong to the stream that freed them. Memory
  preallocated for a device is held outside the pool until the next pipeline (or dynamic-mode
  stream) starts on that device, then handed to its stream's part of the pool;
- growing device buffers (the mixed decoders' scratch memory, the blocks of their output batches'
  arenas) grow by the *device growth factor*.

``release_unused`` frees what no batch uses: free pool blocks, unclaimed preallocations, the arenas'
free blocks, CuPy's cached blocks and the engine's host buffer pool.
"""
from __future__ import annotations

import bisect
import threading
import time
import weakref
from typing import Any, Callable

from .. import _engine
from ._runtime import available, require

MIN_STAGING = 1 << 16  # the smallest staging block: small copies share one size


class _Settings:
    """DALI's defaults: buffers grow by 10%; host buffers shrink below half use."""
    host_growth = 1.1
    device_growth = 1.1
    host_shrink = 0.5


settings = _Settings()


def check_growth_factor(factor: float) -> float:
    factor = float(factor)
    if not 1.0 <= factor <= 4.0:
        raise ValueError(f"A growth factor must be between 1 and 4, got {factor}")
    return factor


def check_shrink_threshold(threshold: float) -> float:
    threshold = float(threshold)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"The shrink threshold must be between 0 (never shrink) and 1 (always shrink), "
                         f"got {threshold}")
    return threshold


def grown(capacity: int, needed: int, factor: float) -> int:
    """The new size of a buffer of ``capacity`` bytes that must hold ``needed``: at least ``factor``
    times the old one, so a run of slowly growing needs reallocates seldom."""
    return max(int(needed), int(capacity * factor))


# cudaErrorMemoryAllocation: CuPy 14's runtime module names no error codes
CUDA_ERROR_MEMORY_ALLOCATION = 2


def own_device_memory(cp: Any, nbytes: int) -> Any:
    """``nbytes`` of device memory outside the pool (cupy.cuda.Memory), on the current device. The
    pool's cached blocks are free memory too: when the device has no room, they go back first, as
    the pool does when it runs out itself."""
    try:
        return cp.cuda.Memory(nbytes)
    except cp.cuda.runtime.CUDARuntimeError as e:  # cudaMalloc's own error: Memory is not the pool's
        if e.status != CUDA_ERROR_MEMORY_ALLOCATION:
            raise
    cp.get_default_memory_pool().free_all_blocks()
    return cp.cuda.Memory(nbytes)


class PinnedBlock:
    """A staging block: ``size`` bytes at ``ptr`` inside ``owner`` (pinned memory, possibly shared by
    the blocks carved from one preallocated region). ``event`` is recorded after the copy that read
    the block; ``taken`` while a thread fills it."""
    __slots__ = ("ptr", "size", "owner", "event", "taken", "copy_events")

    def __init__(self, owner: Any, ptr: int, size: int):
        self.owner, self.ptr, self.size = owner, ptr, size
        self.event = None
        self.taken = False
        # per device, an event of the block's own, recorded again after each copy from the block: a
        # block is lent again only once its last copy is done, so nothing else waits on the event
        # by then, and no event is created per copy (creating one gives the GIL away)
        self.copy_events: dict[int, Any] = {}

    def free(self) -> bool:
        if self.taken:
            return False
        if self.event is not None and not self.event.done:
            return False
        self.event = None  # done: not asked again
        return True


class _Region:
    """Preallocated pinned memory of ``size`` bytes, carved into blocks front to back."""
    __slots__ = ("mem", "size", "used")

    def __init__(self, mem: Any, size: int):
        self.mem, self.size, self.used = mem, size, 0

    @property
    def left(self) -> int:
        return self.size - self.used


def _size(block: PinnedBlock) -> int:
    return block.size


class PinnedPool:
    """Staging blocks of pinned memory (see the module's docstring); ``alloc(size)`` pins memory."""

    def __init__(self, alloc: Callable[[int], Any] | None = None):
        self._alloc = alloc
        self._blocks: list[PinnedBlock] = []  # by size, smallest first
        self._regions: list[_Region] = []
        self._lock = threading.Lock()
        self._pinned = {"blocks": 0, "bytes": 0, "seconds": 0.0}  # pinning(); under _pinned_lock
        self._pinned_lock = threading.Lock()

    def _pin(self, size: int) -> Any:
        start = time.perf_counter()
        mem = (self._alloc or require("pinned memory").cuda.alloc_pinned_memory)(size)
        seconds = time.perf_counter() - start
        with self._pinned_lock:
            self._pinned["blocks"] += 1
            self._pinned["bytes"] += size
            self._pinned["seconds"] += seconds
        return mem

    def pinned_blocks(self) -> int:
        """How many times this pool has pinned memory so far: a cheap read, which a caller compares
        before and after some work to tell whether the pool grew meanwhile."""
        return self._pinned["blocks"]

    def pinning(self) -> dict[str, float]:
        """The memory this pool pinned so far (preallocations included): allocations, bytes and
        seconds; and the bytes it holds now. Benchmarks read the change over a window."""
        with self._pinned_lock:
            counts = dict(self._pinned)
        return {**counts, "held_bytes": self.held_bytes()}

    def take(self, nbytes: int) -> PinnedBlock:
        """A block of at least ``nbytes``, marked taken: hand it back with ``give_back``."""
        with self._lock:
            block = self._free_block(nbytes)
            if block is None:
                largest = self._blocks[-1].size if self._blocks else 0
                size = max(nbytes, MIN_STAGING)
                if nbytes > largest and largest:
                    size = grown(largest, size, settings.host_growth)
                block = self._carve(nbytes, size)
            if block is not None:
                block.taken = True
                return block
        # pinning runs outside the lock: it takes 0.4-1.2 ms a MB (an H100's host, 2026-12-07: 270 MB in
        # 0.20-0.28 s, 3 GB in 1.7-2.2 s), and under the lock every other copy waited for it, the
        # hardware decoder's code streams included
        mem = self._pin(size)
        block = PinnedBlock(mem, mem.ptr, size)
        block.taken = True
        with self._lock:
            bisect.insort(self._blocks, block, key=_size)
        return block

    def _free_block(self, nbytes: int) -> PinnedBlock | None:
        """The smallest free block worth lending for ``nbytes`` (None: none)."""
        for b in self._blocks:  # smallest first: only blocks that fit are asked whether their copy is done
            if b.size < nbytes or b.taken:
                continue
            if not self._worth_lending(b.size, nbytes):
                return None  # the larger blocks are not worth it either
            if b.free():
                return b
        return None

    @staticmethod
    def _worth_lending(size: int, nbytes: int) -> bool:
        return size <= MIN_STAGING or nbytes >= settings.host_shrink * size

    def _carve(self, nbytes: int, size: int) -> PinnedBlock | None:
        for region in self._regions:
            if region.left >= nbytes:
                take = min(region.left, size)
                block = PinnedBlock(region.mem, region.mem.ptr + region.used, take)
                region.used += take
                bisect.insort(self._blocks, block, key=_size)
                return block
        return None

    @staticmethod
    def give_back(block: PinnedBlock, event: Any) -> None:
        """``event``: recorded after the copy that reads the block; it is lent again once done."""
        block.event = event
        block.taken = False

    def reserve(self, nbytes: int) -> None:
        """Pins memory so that ``nbytes`` more of staging blocks come without pinning any."""
        with self._lock:
            free = sum(r.left for r in self._regions)
            if nbytes > free:
                size = int(nbytes - free)
                self._regions.append(_Region(self._pin(size), size))

    def release_unused(self) -> int:
        """Frees the blocks (and preallocated regions) no copy uses; returns the bytes freed. Copies
        already queued from a block that no thread holds are waited for first: a pipeline deleted
        right after ``run()`` leaves its last upload queued, and its memory is unused once that ends."""
        with self._lock:
            queued = [b.event for b in self._blocks if not b.taken and b.event is not None and not b.event.done]
        for event in queued:
            event.synchronize()
        with self._lock:
            busy = {id(b.owner) for b in self._blocks if not b.free()}
            freed = sum(b.size for b in self._blocks if id(b.owner) not in busy)
            freed += sum(r.left for r in self._regions if id(r.mem) not in busy)
            self._blocks = [b for b in self._blocks if id(b.owner) in busy]
            self._regions = [r for r in self._regions if id(r.mem) in busy]
            return freed

    def held_bytes(self) -> int:
        with self._lock:
            return sum(b.size for b in self._blocks) + sum(r.left for r in self._regions)


pinned = PinnedPool()

# Device memory preallocated per device, held outside CuPy's pool until a stream claims it.
_device_reserve: dict[int, Any] = {}
_device_lock = threading.Lock()


def device_count() -> int:
    """CUDA devices visible here (0 without CUDA)."""
    if not available():
        return 0
    return int(require().cuda.runtime.getDeviceCount())


def preallocate_device(nbytes: int, device_id: int) -> None:
    cp = require("PreallocateDeviceMemory")
    count = cp.cuda.runtime.getDeviceCount()
    if not 0 <= device_id < count:
        raise RuntimeError(f"device_id {device_id} is out of range: this machine has {count} CUDA device(s)")
    with _device_lock:
        held = _device_reserve.get(device_id)
        if held is not None and held.size >= nbytes:
            return
        _device_reserve.pop(device_id, None)  # freed before the larger one is taken
        with cp.cuda.Device(device_id):
            _device_reserve[device_id] = cp.cuda.Memory(int(nbytes))


def claim_device_reserve(cp: Any, device_id: int, stream: Any) -> None:
    """Hands the memory preallocated for ``device_id`` to ``stream``'s part of CuPy's pool (a block
    allocated on the stream and freed at once stays cached there)."""
    with _device_lock:
        held = _device_reserve.pop(device_id, None)
    if held is None:
        return
    nbytes = held.size
    del held
    with cp.cuda.Device(device_id), stream:
        cp.cuda.alloc(nbytes)


_holders: "weakref.WeakSet[Any]" = weakref.WeakSet()


def hold_unused(holder: Any) -> None:
    """Registers an object that keeps device memory beside the pool (``holder.release_unused()``
    frees what no batch uses, ``holder.held_bytes()`` says how much it keeps): ``release_unused``
    frees it too, and ``device_memory_held`` counts it."""
    _holders.add(holder)


def device_memory_held() -> dict[str, int]:
    """Bytes of device memory held now, by holder: the arenas' blocks (``arenas``, lent or free) and,
    with CuPy, its pool on the current device (``pool``, of which ``pool_in_use`` lent out). What a
    process's device memory holds beyond them is the CUDA context's, the decoders' (nvImageCodec's)
    and the frameworks'."""
    held = {"arenas": sum(holder.held_bytes() for holder in list(_holders))}
    if available():
        pool = require().get_default_memory_pool()
        held["pool"], held["pool_in_use"] = int(pool.total_bytes()), int(pool.used_bytes())
    return held


def release_unused() -> None:
    """Frees unused memory of every pool: pinned staging blocks, unclaimed device preallocations,
    the arenas' free blocks, CuPy's cached device and pinned blocks, and the engine's host buffer
    pool. Batches a consumer freed go back to their pools first, once its work on them has passed
    (waiting for it)."""
    pinned.release_unused()
    _engine.pool_clear()
    if not available():
        return
    _engine.release_passed_owners(wait=True)
    cp = require()
    with _device_lock:
        _device_reserve.clear()
    for holder in list(_holders):
        holder.release_unused()
    pool = cp.get_default_memory_pool()
    for device_id in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(device_id):
            pool.free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()
