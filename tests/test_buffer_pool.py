"""The host buffer pool: memory returns when the last view dies, and is reused by the next batch."""
import gc

import numpy as np
import pytest

from penstock import _engine
from penstock._batch import POOLED_BYTES, host_buffer


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _clear_pool() -> None:
    """An empty pool, with the garbage of earlier tests collected first: a buffer freed by a later
    gc.collect() in the test would otherwise land in the pool and be counted."""
    gc.collect()
    _engine.pool_clear()


def test_large_buffers_are_reused_after_every_view_is_gone():
    _clear_pool()
    a = host_buffer(POOLED_BYTES, np.float32)
    a[:] = 2.5
    address = _address(a)
    view = a[100:200]
    del a
    gc.collect()
    # the view still holds the block (other small blocks may come back meanwhile: the threads of
    # earlier tests' pipelines end in the background)
    assert _engine.pool_cached_bytes() < POOLED_BYTES * 4
    np.testing.assert_array_equal(view, 2.5)
    del view
    gc.collect()
    assert _engine.pool_cached_bytes() >= POOLED_BYTES * 4
    b = host_buffer(POOLED_BYTES, np.float32)
    assert _address(b) == address and b.dtype == np.float32 and b.shape == (POOLED_BYTES,)


def test_small_buffers_bypass_the_pool():
    _clear_pool()
    a = host_buffer(100, np.int16)
    assert a.shape == (100,) and a.dtype == np.int16
    del a
    gc.collect()
    assert _engine.pool_cached_bytes() == 0


def test_pooled_arrays_are_64_byte_aligned_and_sized_in_classes():
    _clear_pool()
    sizes = [POOLED_BYTES + k * 12345 for k in range(5)]
    arrays = [_engine.empty_pooled(n) for n in sizes]
    assert all(a.nbytes == n and _address(a) % 64 == 0 for n, a in zip(sizes, arrays))
    del arrays
    gc.collect()
    cached = _engine.pool_cached_bytes()
    assert sum(sizes) <= cached <= sum(sizes) * 1.125 + 5 * 64  # classes waste at most 1/8
    _clear_pool()
    assert _engine.pool_cached_bytes() == 0


def test_pipeline_outputs_stay_valid_while_held():
    from penstock import fn, pipeline_def
    big = [np.full((512, 512, 3), k, np.uint8) for k in range(4)]

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        return fn.cast(fn.external_source(source=lambda: big), dtype=5) + 1  # INT16: pooled output

    p = pipe()
    held = [p.run()[0] for _ in range(4)]  # later iterations must not reuse memory still held
    for batch in held:
        for k in range(4):
            assert (batch.at(k) == k + 1).all()


def test_a_block_not_reused_for_a_while_is_freed():
    """Batches of varying sizes must not leave a block of every size they ever had."""
    _clear_pool()
    rare = _engine.empty_pooled(3 * POOLED_BYTES)
    del rare
    gc.collect()
    assert _engine.pool_cached_bytes() >= 3 * POOLED_BYTES
    for _ in range(300):  # a recurring batch size, reused each time: more acquires than the idle limit
        _engine.empty_pooled(POOLED_BYTES)
    assert _engine.pool_cached_bytes() == POOLED_BYTES


def test_a_slightly_larger_cached_block_is_reused():
    _clear_pool()
    a = _engine.empty_pooled(POOLED_BYTES + POOLED_BYTES // 10)
    address = _address(a)
    del a
    gc.collect()
    b = _engine.empty_pooled(POOLED_BYTES)  # a size class below the cached block's, within a quarter
    assert _address(b) == address and b.nbytes == POOLED_BYTES
    c = _engine.empty_pooled(POOLED_BYTES // 2)  # too small for that block to serve: a new one
    assert _address(c) != address


def test_file_batches_and_batches_packed_from_samples_come_from_the_pool(tmp_path):
    """Hundreds of KB allocated and freed every iteration outside the pool made glibc raise its
    mmap and trim thresholds and keep that much free memory in every reader thread's arena."""
    _clear_pool()
    paths = []
    for k in range(3):
        paths.append(str(tmp_path / f"{k}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(bytes([k]) * 100_000)
    buf, sizes = _engine.read_files(_engine.ThreadPool(1), paths)
    assert sizes.tolist() == [100_000] * 3 and buf[:100_000].max() == 0 and buf[200_000:].min() == 2
    del buf
    gc.collect()
    assert _engine.pool_cached_bytes() >= 300_000

    from penstock.tensors import TensorListCPU
    _clear_pool()
    batch = TensorListCPU([np.full((200, 200), k, np.uint8) for k in range(3)])  # 120,000 bytes packed
    assert batch.at(2).min() == 2 and POOLED_BYTES <= 120_000
    del batch
    gc.collect()
    assert _engine.pool_cached_bytes() >= 120_000
    # arrays of references never get pooled (uninitialized) memory: refused for their type, as before
    with pytest.raises(TypeError, match="no DALIDataType"):
        TensorListCPU([np.array(["a"] * 20_000, object)] * 2)
