"""GPU tensor classes (CuPy memory) and their CUDA hand-off to PyTorch. Needs CuPy and a CUDA device."""
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
