"""GPU tensor classes (CuPy memory) and their CUDA hand-off to PyTorch. Needs CuPy and a CUDA device."""
import gc
import weakref

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cp.is_available(), reason="needs a CUDA device")]

from penstock.tensors import TensorGPU, TensorListCPU, TensorListGPU  # noqa: E402
from penstock.types import DALIDataType  # noqa: E402


def test_batch_moves_between_host_and_device_unchanged():
    host = TensorListCPU([np.arange(6, dtype=np.int16).reshape(2, 3), np.full((4, 3), 7, np.int16)], "HW")
    dev = TensorListGPU(host)
    assert dev.shape() == host.shape() and dev.dtype == DALIDataType.INT16 and dev.layout() == "HW"
    back = dev.as_cpu()
    for i in range(2):
        np.testing.assert_array_equal(back.at(i), host.at(i))
    np.testing.assert_array_equal(cp.asnumpy(dev[1]._array), host.at(1))


def test_dense_batch_is_one_device_tensor_without_a_copy():
    data = cp.arange(24, dtype=cp.float32).reshape(4, 2, 3)
    dev = TensorListGPU(data, "HW")
    t = dev.as_tensor()
    assert isinstance(t, TensorGPU) and t.shape() == [4, 2, 3]
    assert t.data_ptr() == int(data.data.ptr)
    assert t.__cuda_array_interface__["shape"] == (4, 2, 3)


def test_torch_receives_cuda_tensors_ordered_after_the_producer_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock.plugin.pytorch import feed_ndarray
    from penstock_pytorch.tensors import to_torch
    producer = cp.cuda.Stream(non_blocking=True)
    with producer:
        data = cp.arange(1 << 20, dtype=cp.float32).reshape(256, 4096) * 3  # queued on producer
    batch = TensorListGPU(data, stream=producer)
    t = to_torch(batch)
    assert t.is_cuda and t.data_ptr() == int(data.data.ptr)  # zero copy
    assert torch.equal(t[5, :4].cpu(), torch.arange(5 * 4096, 5 * 4096 + 4, dtype=torch.float32) * 3)
    out = torch.empty((256, 4096), dtype=torch.float32, device="cuda")
    feed_ndarray(batch, out)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), torch.from_numpy(cp.asnumpy(data)))


def test_memory_lent_to_torch_goes_back_to_the_pool_only_after_torchs_work_on_it():
    """A batch made on the pipeline's stream and read by torch on its default stream: when torch
    frees its view, the memory goes back to the pipeline's pool only once torch's work queued until
    then has passed, so the pool cannot hand it out again under torch's still-running kernel; the
    pipeline's stream goes on meanwhile (waiting for torch's there held every later piece of the
    pipeline's GPU work back behind the model's queued steps)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock import _engine
    from penstock_pytorch.tensors import to_torch
    shape = (64, 1024)
    producer = cp.cuda.Stream(non_blocking=True)
    pool = cp.cuda.MemoryPool()  # of its own: its only free block is the one torch gives back
    with cp.cuda.using_allocator(pool.malloc):
        with producer:
            data = cp.ones(shape, dtype=cp.float32)
        lent = int(data.data.ptr)
        t = to_torch(TensorListGPU(data, stream=producer))
        del data
        t.sum()  # loads the kernels first: a kernel's first launch may wait for the GPU (lazy loading)
        torch.cuda.synchronize()
        torch.cuda._sleep(200_000_000)  # torch's stream is busy for a while before it reads the batch
        total = t.sum()
        del t
        with producer:
            other = cp.zeros(shape, dtype=cp.float32)  # the pool's next block of that size on the stream
        producer.synchronize()  # the pipeline's stream is not held behind torch's
        assert not torch.cuda.current_stream().query()  # torch is still at work
        assert int(other.data.ptr) != lent
        torch.cuda.synchronize()
        assert total.item() == shape[0] * shape[1]
        assert _engine.release_passed_owners() >= 1
        with producer:
            again = cp.empty(shape, dtype=cp.float32)
        assert int(again.data.ptr) == lent  # back in the pool once torch was done


def test_a_view_keeps_its_producers_stream_until_torch_frees_it():
    """The pipeline (its stream among its objects) may be gone before the training loop frees a
    batch: the view keeps the stream (the pool's part its memory goes back to) until torch's work
    on it has passed. (Torch may free the view without the GIL; the reference is then dropped by
    the engine's next call.)"""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock import _engine
    from penstock_pytorch.tensors import to_torch

    def lend():
        producer = cp.cuda.Stream(non_blocking=True)
        with producer:
            data = cp.full((8, 16), 3, dtype=cp.int32)
        return to_torch(TensorListGPU(data, stream=producer)), weakref.ref(producer)
    t, stream = lend()
    gc.collect()
    assert stream() is not None  # held by the view
    assert int(t.sum().item()) == 3 * 8 * 16
    del t
    _engine.release_passed_owners(wait=True)
    gc.collect()
    assert stream() is None


def test_a_batch_hands_torch_its_dense_view_with_shape_and_type():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock_pytorch.tensors import to_torch
    for dtype, want in ((cp.uint8, torch.uint8), (cp.float16, torch.float16), (cp.int64, torch.int64),
                        (cp.bool_, torch.bool)):
        data = (cp.arange(24) % 2).astype(dtype).reshape(4, 3, 2)
        t = to_torch(TensorListGPU(data, "HW"))
        assert t.dtype == want and tuple(t.shape) == (4, 3, 2) and t.data_ptr() == int(data.data.ptr)
        assert torch.equal(t.cpu(), torch.from_numpy(cp.asnumpy(data)))
    samples = [cp.full((2, 3), k, cp.int32) for k in range(3)]
    t = to_torch(TensorListGPU(samples))
    assert tuple(t.shape) == (3, 2, 3) and t[:, 0, 0].tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="different shapes"):
        to_torch(TensorListGPU([cp.zeros((2, 3)), cp.zeros((3, 3))]))


def _gpu_count() -> int:
    return cp.cuda.runtime.getDeviceCount() if cp.is_available() else 0


@pytest.mark.skipif(_gpu_count() < 2, reason="needs two GPUs")
def test_a_batch_on_another_gpu_than_the_current_one_is_handed_over_where_it_is():
    """cupy.asarray copies an array of another GPU onto the current one: a batch of GPU 1 read on a
    thread whose current GPU is 0 (one pipeline per GPU in a process) must stay on GPU 1, unmoved."""
    with cp.cuda.Device(1):
        data = cp.arange(24, dtype=cp.float32).reshape(4, 6)
        samples = [cp.full((2, 3), k, cp.int32) for k in range(3)]
    with cp.cuda.Device(0):
        batch = TensorListGPU(data)
        dense = batch.as_tensor()
        assert batch.device_id() == 1 and dense.device_id() == 1 and dense._array.device.id == 1
        assert dense.data_ptr() == int(data.data.ptr)
        assert batch[2].data_ptr() == int(data.data.ptr) + 2 * 6 * 4
        assert batch.__dlpack_device__() == dense.__dlpack_device__() == (2, 1)
        listed = TensorListGPU(samples)
        assert listed.device_id() == 1 and listed.as_tensor()._array.device.id == 1
        np.testing.assert_array_equal(listed.as_cpu().as_array()[:, 0, 0], [0, 1, 2])
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            return
        from penstock_pytorch.tensors import to_torch
        t = to_torch(batch)
        assert t.device == torch.device("cuda", 1) and t.data_ptr() == int(data.data.ptr)
        assert t.sum().item() == sum(range(24))


def test_tensor_methods_match_the_host_tensors():
    host = TensorListCPU([np.arange(6, dtype=np.int32).reshape(1, 2, 3), np.full((1, 1, 3), -1, np.int32)], "ABC")
    dev = TensorListGPU(host)
    dev._source_info = ["a.bin", "b.bin"]
    t = dev[1]
    assert t.source_info() == "b.bin" and t.get_property("source_info") == "b.bin"
    assert t.get_property("layout") == "ABC" and t.get_property("unknown") is None
    assert t.squeeze(1) is True and t.shape() == [1, 3] and t.layout() == "AC"
    assert t.squeeze(1) is False and t.shape() == [1, 3]
    with pytest.raises(RuntimeError, match="axis 5 is out of bounds"):
        t.squeeze(5)
    assert t.squeeze() is True and t.shape() == [3] and t.layout() == "C"
    t.set_layout("X")
    assert t.layout() == "X" and t.as_cpu().layout() == "X" and t.as_cpu().source_info() == "b.bin"
    with pytest.raises(ValueError):
        t.set_layout("XY")
    assert t.reinterpret(DALIDataType.UINT32) is None
    assert t.dtype == DALIDataType.UINT32 and np.array(t.as_cpu()).tolist() == [0xFFFFFFFF] * 3
    with pytest.raises(RuntimeError, match="element size must not change"):
        t.reinterpret(DALIDataType.UINT8)
    dev.reinterpret(DALIDataType.FLOAT)
    assert dev.dtype == DALIDataType.FLOAT
    np.testing.assert_array_equal(dev.as_cpu().at(0), host.at(0).view(np.float32))
    assert t.stream is dev.stream


def test_copy_to_external_orders_on_the_given_stream():
    data = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    t = TensorGPU(data)
    for kernel in (False, True):
        out = cp.zeros(12, cp.float32)
        stream = cp.cuda.Stream(non_blocking=True)
        stream.wait_event(cp.cuda.get_current_stream().record())  # the zeros first, then the copy
        t.copy_to_external(out.data.ptr, stream, non_blocking=True, use_copy_kernel=kernel)
        stream.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(out), np.arange(12, dtype=np.float32))
    batch = TensorListGPU([cp.ones((2, 2), cp.int16), cp.full((1, 3), 5, cp.int16)])
    out = cp.zeros(7, cp.int16)
    batch.copy_to_external(out.data.ptr)  # the legacy default stream, the host waits
    assert cp.asnumpy(out).tolist() == [1, 1, 1, 1, 5, 5, 5]


def test_broadcast_and_dlpack_lists():
    t = TensorGPU(cp.arange(3, dtype=cp.int16), "X")
    tl = TensorListGPU.broadcast(t, 4)
    assert len(tl) == 4 and tl.layout() == "X" and tl.shape() == [(3,)] * 4
    np.testing.assert_array_equal(tl.as_cpu().as_array(), np.tile(np.arange(3, dtype=np.int16), (4, 1)))
    parts = [cp.arange(3, dtype=cp.float32), cp.arange(5, dtype=cp.float32)]
    tl = TensorListGPU.from_dlpack_list(parts, "X")
    assert tl.shape() == [(3,), (5,)] and tl.layout() == "X"
    np.testing.assert_array_equal(tl.as_cpu().at(1), np.arange(5, dtype=np.float32))
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        tl = TensorListGPU.from_dlpack_list([torch.ones(2, device="cuda"), torch.zeros(2, device="cuda")])
        assert tl.as_cpu().as_array().tolist() == [[1, 1], [0, 0]]


def test_data_made_on_a_side_stream_is_waited_for_by_other_streams():
    """An array CuPy made on a non-blocking stream (its current one) and handed in without a stream:
    the tensor names that stream as its producer, and a copy on another stream reads the values."""
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        data = cp.arange(1 << 22, dtype=cp.float32) * 2  # long enough to be still running when the copy is queued
        t, batch = TensorGPU(data), TensorListGPU(data.reshape(4, -1))
    assert t.stream is side and batch.stream is side
    assert TensorGPU(data, stream=cp.cuda.Stream.null).stream is cp.cuda.Stream.null  # a given stream wins
    out = cp.zeros(1 << 22, cp.float32)
    cp.cuda.Device().synchronize()  # the zeros are in place before the copy's stream starts
    other = cp.cuda.Stream(non_blocking=True)
    t.copy_to_external(out.data.ptr, other, non_blocking=True)
    other.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out[-4:]), np.arange((1 << 22) - 4, 1 << 22, dtype=np.float32) * 2)


def test_to_torch_tensor_copies_on_the_device():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock.plugin.pytorch.torch_utils import to_torch_tensor
    t = TensorGPU(cp.arange(6, dtype=cp.float32).reshape(2, 3))
    copied, shared = to_torch_tensor(t, copy=True), to_torch_tensor(t, copy=False)
    assert copied.is_cuda and copied.data_ptr() != t.data_ptr() and shared.data_ptr() == t.data_ptr()
    assert copied.cpu().tolist() == shared.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_foreign_streams_are_wrapped_without_cupys_deprecated_external_stream():
    import warnings
    from penstock.tensors._device import cupy_stream
    made = cp.cuda.Stream(non_blocking=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # CuPy 14 deprecates ExternalStream
        wrapped = cupy_stream(made.ptr, 0)
        with cp.cuda.Device(0), wrapped:
            data = cp.arange(8) * 2  # queued on the wrapped stream
    assert wrapped.ptr == made.ptr and cupy_stream(0).ptr == 0
    made.synchronize()
    assert data.tolist() == [2 * k for k in range(8)]
