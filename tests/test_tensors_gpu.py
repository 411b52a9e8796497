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
