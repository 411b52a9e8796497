"""The batch arena (penstock._cuda._batch_arena): blocks all as large as the largest batch so far,
lent to batches and taken back when their last view goes; outgrown blocks go back to the device.
The bookkeeping on a stand-in device here; the batches themselves on a GPU."""
import contextlib
import gc
import types
import weakref

import numpy as np
import pytest

from penstock import _cuda
from penstock._cuda import _pools
from penstock._cuda._batch_arena import BatchArena


class _Block:
    """A stand-in for a block of device memory (cupy.cuda.Memory)."""

    def __init__(self, size):
        self.size, self.ptr = size, id(self)


class _CudaError(RuntimeError):
    """What cupy.cuda.Memory raises: cudaMalloc's status, not the pool's OutOfMemoryError."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


_NO_MEMORY, _ILLEGAL_ADDRESS = 2, 700  # cudaErrorMemoryAllocation, cudaErrorIllegalAddress


def _arena(device_bytes: int = 1 << 40, error: int = _NO_MEMORY) -> tuple[BatchArena, list, types.SimpleNamespace]:
    """An arena on a stand-in device of ``device_bytes``, the blocks it made there, and the shared
    pool, whose cached blocks take ``pool.cached`` bytes of the device until it frees them; an
    allocation the device has no room for fails with CUDA status ``error``."""
    made = []
    pool = types.SimpleNamespace(cached=0)

    def memory(size):
        if sum(b.size for b in made) + pool.cached + size > device_bytes:
            raise _CudaError(error)
        made.append(_Block(size))
        return made[-1]

    pool.free_all_blocks = lambda: setattr(pool, "cached", 0)
    runtime = types.SimpleNamespace(CUDARuntimeError=_CudaError)
    ctx = types.SimpleNamespace(device=contextlib.nullcontext(), record=object, cp=types.SimpleNamespace(
        cuda=types.SimpleNamespace(Memory=memory, runtime=runtime), get_default_memory_pool=lambda: pool))
    return BatchArena(ctx), made, pool


def test_a_block_a_batch_gave_back_takes_the_next_batch_up_to_its_size():
    arena, made, _ = _arena()
    first = arena._take(1000)
    second = arena._take(600)  # the first is lent: a block of its own, as large as the largest
    assert [b.size for b in made] == [1000, 1000]
    arena._give_back(first)
    assert arena._take(900) is first and len(made) == 2
    arena._give_back(second)


def test_a_larger_batch_drops_the_free_blocks_and_later_the_outgrown_lent_ones():
    arena, made, _ = _arena()
    lent, free = arena._take(1000), arena._take(1000)
    arena._give_back(free)
    free_ref = weakref.ref(free)
    del free
    bigger = arena._take(1050)  # grows by the device growth factor at least
    assert bigger.size == int(1000 * _pools.settings.device_growth)
    made.clear()
    gc.collect()
    assert free_ref() is None  # the free block went back to the device
    arena._give_back(lent)  # smaller than the blocks now: not kept
    assert arena._free == []
    arena._give_back(bigger)
    assert arena._free == [bigger]


def test_the_arena_counts_the_bytes_of_its_blocks_lent_or_free_until_it_drops_them():
    arena, _, _ = _arena()
    held_before = _pools.device_memory_held()["arenas"]  # (other tests' arenas may be alive)
    lent, free = arena._take(1000), arena._take(1000)
    arena._give_back(free)
    assert arena.held_bytes() == 2000
    assert _pools.device_memory_held()["arenas"] == held_before + 2000
    bigger = arena._take(1050)  # the free block goes, the lent one stays until it comes back
    assert arena.held_bytes() == 1000 + bigger.size
    arena._give_back(lent)
    assert arena.held_bytes() == bigger.size
    arena._give_back(bigger)
    arena.release_unused()
    assert arena.held_bytes() == 0


def test_a_block_the_device_has_no_room_for_takes_the_shared_pools_cached_blocks_first():
    arena, made, pool = _arena(device_bytes=1000)
    pool.cached = 600
    block = arena._take(700)
    assert block.size == 700 and pool.cached == 0
    with pytest.raises(_CudaError):
        arena._take(1000)  # no room even so: the device's error


def test_another_cuda_error_of_an_allocation_frees_nothing():
    arena, _, pool = _arena(device_bytes=1000, error=_ILLEGAL_ADDRESS)
    pool.cached = 600
    with pytest.raises(_CudaError):
        arena._take(700)
    assert pool.cached == 600


def test_a_batch_freed_inside_its_arena_on_the_same_thread_comes_back():
    # the garbage collector may free a batch while its thread is inside _take, holding the lock
    import threading
    arena, _, _ = _arena()
    block = arena._take(10)
    done = threading.Event()

    def give_back_inside():
        with arena._lock:
            arena._give_back(block)
        done.set()

    worker = threading.Thread(target=give_back_inside, daemon=True)
    worker.start()
    worker.join(5)
    assert done.is_set() and arena._free == [block]


def test_a_block_smaller_than_the_batch_is_never_lent():
    arena, made, _ = _arena()
    arena._free.append(_Block(5))  # as if the collector gave it back in the middle of a growth
    arena._size = 100
    block = arena._take(50)
    assert block.size == 100 and arena._free == []


class _Watched(_Block):
    """A stand-in block that records, when it goes back to the device, whether its arena's lock is held
    (freeing device memory synchronizes the device: other threads' batches must not wait on it)."""

    def __init__(self, size, arena, freed):
        super().__init__(size)
        self.arena, self.freed = arena, freed

    def __del__(self):
        self.freed.append(self.arena._lock._is_owned())


def test_blocks_go_back_to_the_device_outside_the_arenas_lock():
    arena, _, _ = _arena()
    freed = []
    arena._free.append(_Watched(5, arena, freed))  # given back in the middle of a growth
    arena._size = 100
    arena._take(50)
    arena._free.append(_Watched(100, arena, freed))
    arena.release_unused()
    assert freed == [False, False]


def test_release_unused_frees_the_free_blocks_only():
    arena, _, _ = _arena()
    lent, free = arena._take(10), arena._take(10)
    arena._give_back(free)
    arena.release_unused()
    assert arena._free == []
    arena._give_back(lent)  # the lent one comes back as usual
    assert arena._free == [lent]


def test_a_freed_block_keeps_the_event_of_its_freeing_until_it_is_lent_or_dropped():
    arena, _, _ = _arena()
    first, second = arena._take(1000), arena._take(1000)
    arena._give_back(first)
    arena._give_back(second)
    assert set(arena._freed_at) == {first.ptr, second.ptr}
    arena._take(2000)  # outgrown: the free blocks go, and their events with them
    assert arena._freed_at == {}
    lent = arena._take(2000)
    arena._give_back(lent)
    arena.release_unused()
    assert arena._freed_at == {}


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
def test_batches_of_varying_size_reuse_the_blocks_their_predecessors_freed():
    import cupy as cp
    ctx = _cuda.DeviceContext(0)
    arena = ctx.batch_arena()
    sizes = [(300, 200, 3), (280, 210, 3), (310, 190, 3), (250, 250, 3), (200, 300, 3)]
    addresses, afters = [], []
    held = []
    for k, shape in enumerate(sizes):
        if len(held) == 2:  # two batches in flight, the oldest dropped before the next is made
            held.pop(0)
        batch, after = arena.new_batch(np.array([shape, shape[::-1]], np.int64), np.uint8, "HWC")
        with ctx:
            batch._buf[:] = k
        assert batch._buf.size == 2 * int(np.prod(shape)) and batch.stream is ctx.stream
        addresses.append(int(batch._buf.data.ptr))
        afters.append(after)
        held.append(batch)
    assert addresses[2] == addresses[0]  # the first batch's block, free again, took the third
    # a new block is written at once; a freed one after the event its batch's freeing recorded
    assert afters[0] is None and afters[1] is None and isinstance(afters[2], cp.cuda.Event)
    # the fourth outgrew the blocks: the second's, free, went back, and so did the first's once free
    assert arena._free == []
    ctx.stream.synchronize()
    assert int(cp.asnumpy(held[-1]._buf).max()) == len(sizes) - 1
    del batch
    held.clear()
    gc.collect()
    assert len(arena._free) == 2
    assert arena.held_bytes() == sum(b.size for b in arena._free)
    assert _pools.device_memory_held()["arenas"] >= arena.held_bytes()
    from penstock import backend
    backend.ReleaseUnusedMemory()  # the arenas' free blocks go with the pools'
    assert arena._free == [] and arena.held_bytes() == 0


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
def test_memory_the_device_has_no_room_for_frees_the_pools_cached_blocks_then_fails_as_cuda_does():
    import cupy as cp
    with cp.cuda.Device(0):
        cached = cp.empty(1 << 20, np.uint8)
        del cached  # back to the pool, which keeps it
        pool = cp.get_default_memory_pool()
        assert pool.free_bytes() >= 1 << 20
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as failed:
            _pools.own_device_memory(cp, 1 << 60)
        assert failed.value.status == _pools.CUDA_ERROR_MEMORY_ALLOCATION
        assert pool.free_bytes() == 0
