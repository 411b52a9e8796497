"""penstock.backend's memory and device controls acting on penstock's pools (_cuda/_pools): the pinned
staging pool's lending, growth, shrink threshold, preallocation and release with stand-in pinned
memory on any machine; device preallocation and release on a GPU (marked gpu)."""
import concurrent.futures
import threading

import numpy as np
import pytest

import penstock.backend as backend
from penstock import _engine, fn, pipeline_def
from penstock._cuda import _pools


@pytest.fixture(autouse=True)
def default_settings():
    yield
    backend.SetBufferGrowthFactor(1.1)
    backend.SetHostBufferShrinkThreshold(0.5)


class _Event:
    def __init__(self, done=False):
        self.done = done

    def synchronize(self):
        self.done = True


class _Pinned:
    """Stand-in pinned memory: addresses only."""
    next_ptr = 1 << 20

    def __init__(self, size):
        self.ptr, self.size = _Pinned.next_ptr, size
        _Pinned.next_ptr += size


@pytest.fixture
def pool():
    allocations = []

    def alloc(size):
        allocations.append(size)
        return _Pinned(size)
    p = _pools.PinnedPool(alloc)
    p.allocations = allocations
    return p


def test_growth_factors_and_shrink_threshold_are_set_and_checked():
    assert (backend.GetHostBufferGrowthFactor(), backend.GetDeviceBufferGrowthFactor(),
            backend.GetHostBufferShrinkThreshold()) == (1.1, 1.1, 0.5)  # DALI's defaults
    backend.SetHostBufferGrowthFactor(2)
    backend.SetDeviceBufferGrowthFactor(1.5)
    assert (backend.GetHostBufferGrowthFactor(), backend.GetDeviceBufferGrowthFactor()) == (2.0, 1.5)
    backend.SetBufferGrowthFactor(3)
    assert (backend.GetHostBufferGrowthFactor(), backend.GetDeviceBufferGrowthFactor()) == (3.0, 3.0)
    for bad in (0.5, 4.5):
        with pytest.raises(ValueError, match="between 1 and 4"):
            backend.SetHostBufferGrowthFactor(bad)
    with pytest.raises(ValueError, match="between 0 .never shrink. and 1"):
        backend.SetHostBufferShrinkThreshold(1.5)


def test_staging_blocks_are_lent_again_once_their_copy_is_done(pool):
    first = pool.take(1000)
    assert first.size == _pools.MIN_STAGING and first.taken
    pending = _Event()
    pool.give_back(first, pending)
    second = pool.take(1000)  # the first one's copy is still queued
    assert second is not first and pool.allocations == [_pools.MIN_STAGING] * 2
    pool.give_back(second, None)
    pending.done = True
    assert pool.take(500) in (first, second) and len(pool.allocations) == 2


def test_large_copies_grow_blocks_by_the_host_growth_factor(pool):
    block = pool.take(1 << 20)
    pool.give_back(block, None)
    pool.give_back(pool.take(int(1.02 * (1 << 20))), None)  # larger than every block: grown by 10%
    assert pool.allocations == [1 << 20, int(1.1 * (1 << 20))]
    backend.SetHostBufferGrowthFactor(2)
    pool.give_back(pool.take(int(1.2 * (1 << 20))), None)
    assert pool.allocations[-1] == 2 * int(1.1 * (1 << 20))


def test_the_pool_counts_what_it_pinned_and_holds(pool):
    assert pool.pinning() == {"blocks": 0, "bytes": 0, "seconds": 0.0, "held_bytes": 0}
    pool.reserve(8 << 20)
    block = pool.take(16 << 20)  # larger than the region: pinned anew
    counts = pool.pinning()
    assert (counts["blocks"], counts["bytes"], counts["held_bytes"]) == (2, 24 << 20, 24 << 20)
    assert counts["seconds"] >= 0.0
    pool.give_back(block, None)
    pool.give_back(pool.take(12 << 20), None)  # the free block: nothing pinned
    assert pool.pinning()["blocks"] == pool.pinned_blocks() == 2


def test_small_copies_do_not_hold_large_blocks(pool):
    big = pool.take(4 << 20)
    pool.give_back(big, None)
    small = pool.take(1 << 20)  # a quarter of the free block: under the shrink threshold (0.5)
    assert small is not big and small.size == 1 << 20
    pool.give_back(small, None)
    assert pool.take(3 << 20) is big  # three quarters: lent
    pool.give_back(big, None)
    backend.SetHostBufferShrinkThreshold(0)  # never shrink: any free block that fits
    assert pool.take(100 << 10) is small


def test_a_copy_with_a_free_block_does_not_wait_for_another_copy_pinning_memory():
    pinning, release = threading.Event(), threading.Event()

    def slow_alloc(size):
        if size > 1 << 20:  # the large copy's new block: held until the small copy was served
            pinning.set()
            assert release.wait(10)
        return _Pinned(size)
    pool = _pools.PinnedPool(slow_alloc)
    small = pool.take(4096)
    pool.give_back(small, None)
    with concurrent.futures.ThreadPoolExecutor(1) as worker:
        large = worker.submit(pool.take, 8 << 20)
        assert pinning.wait(10)
        assert pool.take(4096) is small  # served while the other copy pins
        release.set()
        assert large.result().size == 8 << 20 and large.result().taken
    assert pool.held_bytes() == (8 << 20) + small.size


def test_preallocated_memory_is_carved_before_more_is_pinned(pool):
    pool.reserve(8 << 20)
    pool.reserve(4 << 20)  # already there: nothing more
    assert pool.allocations == [8 << 20]
    blocks = [pool.take(n) for n in (3 << 20, 100, 2 << 20)]
    assert pool.allocations == [8 << 20]  # carved from the region, back to back
    assert [b.ptr - blocks[0].ptr for b in blocks] == [0, 3 << 20, (3 << 20) + _pools.MIN_STAGING]
    assert pool.held_bytes() == 8 << 20
    for b in blocks[1:]:
        pool.give_back(b, None)
    assert pool.release_unused() == 0  # the region still lends a block
    pool.give_back(blocks[0], None)
    assert pool.release_unused() == 8 << 20 and pool.held_bytes() == 0


def test_release_waits_for_copies_already_queued_but_not_for_blocks_still_being_filled(pool):
    queued, filling = pool.take(1 << 20), pool.take(2 << 20)
    upload = _Event()
    pool.give_back(queued, upload)  # its copy is queued on a stream, not done yet
    assert pool.release_unused() == 1 << 20 and upload.done  # waited for, then freed
    assert pool.held_bytes() == 2 << 20 and filling.taken  # a thread still fills this one
    pool.give_back(filling, None)
    assert pool.release_unused() == 2 << 20 and pool.held_bytes() == 0


def test_release_unused_memory_empties_the_host_pool():
    a = _engine.empty_pooled(4 << 20)
    del a
    assert _engine.pool_cached_bytes() >= 4 << 20
    backend.ReleaseUnusedMemory()
    assert _engine.pool_cached_bytes() == 0


def test_devices_and_versions_without_cuda(monkeypatch):
    monkeypatch.setattr(_pools, "available", lambda: False)
    assert backend.GetCUDADeviceCount() == 0
    assert backend.GetNppVersion() == -1 and backend.GetNvjpegVersion() == -1
    assert isinstance(backend.GetCudaVersion(), int) and isinstance(backend.GetCufftVersion(), int)
    version = backend.GetNvimgcodecVersion()
    assert version == -1 or version >= 900  # the pinned test set has nvImageCodec 0.9


# ---- on a GPU ----------------------------------------------------------------------------------

def _cupy():
    cp = pytest.importorskip("cupy")
    if not cp.is_available():
        pytest.skip("needs a CUDA device")
    return cp


@pipeline_def(batch_size=4, num_threads=2, device_id=0)
def _gpu_pipeline():
    x = fn.external_source(lambda: [np.full((256, 256, 3), i, np.float32) for i in range(4)], batch=True)
    return (x.gpu() * 2 + 1) / 3


@pytest.mark.gpu
def test_preallocated_device_memory_serves_the_next_pipeline():
    cp = _cupy()
    pool = cp.get_default_memory_pool()
    backend.ReleaseUnusedMemory()
    before = pool.total_bytes()
    backend.PreallocateDeviceMemory(64 << 20, 0)
    assert pool.total_bytes() == before  # held outside the pool until a pipeline starts
    pipe = _gpu_pipeline()
    pipe.build()
    claimed = pool.total_bytes()
    assert claimed >= before + (64 << 20)
    for _ in range(3):
        out, = pipe.run()
    np.testing.assert_array_equal(out.as_cpu().at(3), np.full((256, 256, 3), 7 / 3, np.float32))
    assert pool.total_bytes() == claimed  # every allocation came from the preallocated block
    with pytest.raises(RuntimeError, match="out of range"):
        backend.PreallocateDeviceMemory(1 << 20, 99)


@pytest.mark.gpu
def test_pinned_preallocation_and_release():
    _cupy()
    backend.ReleaseUnusedMemory()
    backend.PreallocatePinnedMemory(16 << 20)
    region_bytes = _pools.pinned.held_bytes()
    assert region_bytes >= 16 << 20
    pipe = _gpu_pipeline()
    pipe.run()
    assert _pools.pinned.held_bytes() == region_bytes  # the staging blocks were carved from it
    del pipe
    backend.ReleaseUnusedMemory()
    assert _pools.pinned.held_bytes() == 0
