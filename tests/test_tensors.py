import numpy as np
import pytest

from penstock import backend, tensors, types
from penstock.tensors import TensorCPU, TensorListCPU


def test_classes_exported_from_all_modules():
    for m in (tensors, backend):
        for n in ("TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"):
            assert hasattr(m, n)
    import penstock.backend_impl as bi
    assert bi.TensorListCPU is tensors.TensorListCPU


def test_tensorlist_from_ndarray():
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    tl = TensorListCPU(a, layout="HW")
    assert len(tl) == 2
    assert tl.shape() == [(3, 4), (3, 4)]
    assert all(isinstance(s, tuple) for s in tl.shape())
    assert tl.dtype == types.UINT8
    assert tl.ndim() == 2
    assert tl.layout() == "HW"
    assert tl.is_dense_tensor()
    np.testing.assert_array_equal(tl.as_array(), a)
    np.testing.assert_array_equal(tl.at(1), a[1])


def test_at_returns_writable_copy():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    tl = TensorListCPU(a)
    x = tl.at(0)
    x[0] = 100
    assert tl.at(0)[0] == 0
    assert isinstance(x, np.ndarray)


def test_ragged_tensorlist():
    samples = [np.zeros((2, 3), np.float32), np.ones((4, 3), np.float32)]
    tl = TensorListCPU(samples)
    assert tl.shape() == [(2, 3), (4, 3)]
    assert not tl.is_dense_tensor()
    with pytest.raises(RuntimeError):
        tl.as_array()
    with pytest.raises(RuntimeError):
        tl.as_tensor()
    np.testing.assert_array_equal(tl.at(1), samples[1])


def test_getitem_and_negative_index():
    a = np.arange(6, dtype=np.int16).reshape(3, 2)
    tl = TensorListCPU(a)
    t = tl[-1]
    assert isinstance(t, TensorCPU)
    np.testing.assert_array_equal(np.array(t), a[2])
    with pytest.raises(IndexError):
        tl[3]
    assert len(list(tl)) == 3


def test_tensor_api():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = TensorCPU(a, layout="HW")
    assert t.shape() == [2, 3]
    assert isinstance(t.shape(), list)
    assert t.dtype == types.FLOAT
    assert t.ndim() == 2
    assert t.layout() == "HW"
    np.testing.assert_array_equal(np.array(t), a)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
    assert t.as_cpu() is t or np.array_equal(np.array(t.as_cpu()), a)


def test_tensor_squeeze():
    t = TensorCPU(np.zeros((1, 3, 1), np.uint8))
    t.squeeze()
    assert t.shape() == [3]


def test_as_tensor_and_reshaped():
    a = np.arange(12, dtype=np.int32).reshape(2, 6)
    tl = TensorListCPU(a)
    t = tl.as_tensor()
    assert t.shape() == [2, 6]
    r = tl.as_reshaped_tensor([2, 2, 3])
    np.testing.assert_array_equal(np.array(r), a.reshape(2, 2, 3))


def test_layout_ndim_check():
    with pytest.raises(Exception):
        TensorListCPU(np.zeros((2, 3, 4)), layout="HWC")


def test_broadcast():
    t = TensorCPU(np.array([1, 2, 3], np.int32))
    tl = TensorListCPU.broadcast(t, 4)
    assert len(tl) == 4
    np.testing.assert_array_equal(tl.as_array(), np.tile([1, 2, 3], (4, 1)))


def test_reinterpret():
    a = np.array([[1, 0xFFFFFFFF]], np.uint32)
    tl = TensorListCPU(a)
    assert tl.reinterpret(types.INT32) is None  # in place, as DALI
    assert tl.dtype == types.INT32
    assert tl.at(0).tolist() == [1, -1]


def test_as_cpu_is_identity():
    tl = TensorListCPU(np.zeros((2, 2), np.uint8))
    assert tl.as_cpu() is tl


def test_repr_mentions_fields():
    tl = TensorListCPU(np.zeros((3, 2, 3), np.uint8), layout="HW")
    r = repr(tl)
    assert "TensorListCPU" in r and "DALIDataType.UINT8" in r and "num_samples=3" in r
    assert 'layout="HW"' in r


def test_set_layout():
    tl = TensorListCPU(np.zeros((2, 2, 2), np.uint8))
    assert tl.layout() == ""
    tl.set_layout("HW")
    assert tl.layout() == "HW"


def test_tensor_from_dlpack_capsule():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = TensorCPU(a.__dlpack__(), layout="HW")
    assert t.shape() == [2, 3] and t.dtype == types.INT16 and t.layout() == "HW"
    np.testing.assert_array_equal(np.array(t), a)


def test_tensor_from_dlpack_object():
    a = np.arange(4, dtype=np.float64)

    class Wrapper:
        def __dlpack__(self, *args, **kwargs):
            return a.__dlpack__(*args, **kwargs)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    t = TensorCPU(Wrapper())
    np.testing.assert_array_equal(np.array(t), a)


def test_squeeze_variants():
    t = TensorCPU(np.zeros((1, 3), np.float32))
    assert t.squeeze(0) is True and t.shape() == [3]
    t = TensorCPU(np.zeros((2, 3), np.float32))
    assert t.squeeze() is False and t.shape() == [2, 3]


def test_copy_to_external():
    a = np.arange(12, dtype=np.int32).reshape(2, 2, 3)
    tl = TensorListCPU(a)
    out = np.zeros_like(a)
    tl.copy_to_external(out.ctypes.data)
    np.testing.assert_array_equal(out, a)
    one = np.zeros((2, 3), np.int32)
    tl[1].copy_to_external(one.ctypes.data)
    np.testing.assert_array_equal(one, a[1])


def test_tensorlist_from_tensors_and_noncontiguous():
    tl = TensorListCPU([TensorCPU(np.zeros(2, np.uint8)), TensorCPU(np.ones(2, np.uint8))])
    assert tl.shape() == [(2,), (2,)] and tl.at(1).tolist() == [1, 1]
    src = np.arange(12).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(TensorListCPU(src).as_array(), src)
    f = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert TensorListCPU(f).at(1).tolist() == [3, 4, 5]


def test_from_dlpack_list():
    tl = TensorListCPU.from_dlpack_list([np.arange(3), np.arange(2)])
    assert tl.shape() == [(3,), (2,)]


def test_repr_exact():
    tl = TensorListCPU(np.zeros((2, 2, 3), np.uint8), layout="HW")
    assert repr(tl) == ('TensorListCPU(\n    dtype=DALIDataType.UINT8,\n    layout="HW",\n'
                        '    device="cpu",\n    num_samples=2,\n    shape=[(2, 3), (2, 3)])')
