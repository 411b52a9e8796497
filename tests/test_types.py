import numpy as np
import pytest

from penstock import fn, types


def test_datatype_values():
    expected = {"NO_TYPE": -1, "UINT8": 0, "UINT16": 1, "UINT32": 2, "UINT64": 3, "INT8": 4,
                "INT16": 5, "INT32": 6, "INT64": 7, "FLOAT16": 8, "FLOAT": 9, "FLOAT64": 10,
                "BOOL": 11, "STRING": 12, "FEATURE": 17, "IMAGE_TYPE": 20, "DATA_TYPE": 21,
                "INTERP_TYPE": 22, "TENSOR_LAYOUT": 23, "PYTHON_OBJECT": 24, "_INT64_VEC": 27}
    for name, v in expected.items():
        assert int(getattr(types.DALIDataType, name)) == v


def test_datatype_str_and_module_aliases():
    assert str(types.DALIDataType.FLOAT) == "DALIDataType.FLOAT"
    assert types.FLOAT is types.DALIDataType.FLOAT
    assert types.UINT8 is types.DALIDataType.UINT8
    assert types.RGB is types.DALIImageType.RGB
    assert types.INTERP_LINEAR is types.DALIInterpType.INTERP_LINEAR


def test_image_and_interp_values():
    assert [int(types.DALIImageType[n]) for n in ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA")] == [0, 1, 2, 3, 4]
    names = ["INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3", "INTERP_TRIANGULAR",
             "INTERP_GAUSSIAN"]
    assert [int(types.DALIInterpType[n]) for n in names] == list(range(6))


def test_layout_constants():
    assert types.NHWC == "HWC" and types.NCHW == "CHW"
    assert types.NFHWC == "FHWC" and types.NFCHW == "FCHW" and types.SAME == ""
    assert types.CPU_ONLY_DEVICE_ID == -99999


@pytest.mark.parametrize("dali, npt", [
    ("UINT8", np.uint8), ("UINT16", np.uint16), ("UINT32", np.uint32), ("UINT64", np.uint64),
    ("INT8", np.int8), ("INT16", np.int16), ("INT32", np.int32), ("INT64", np.int64),
    ("FLOAT16", np.float16), ("FLOAT", np.float32), ("FLOAT64", np.float64), ("BOOL", np.bool_)])
def test_numpy_type_round_trip(dali, npt):
    t = getattr(types.DALIDataType, dali)
    assert np.dtype(types.to_numpy_type(t)) == np.dtype(npt)
    assert types.to_dali_type(np.dtype(npt)) == t
    assert types.to_dali_type(npt) == t


def test_tensor_layout_is_str():
    lay = types.TensorLayout("HWC")
    assert lay == "HWC"
    assert isinstance(lay, str)


def test_sample_and_batch_info():
    si = types.SampleInfo(5, 1, 2, 0)
    assert (si.idx_in_epoch, si.idx_in_batch, si.iteration, si.epoch_idx) == (5, 1, 2, 0)
    bi = types.BatchInfo(3, 1)
    assert (bi.iteration, bi.epoch_idx) == (3, 1)


def test_pipeline_api_type():
    assert {m.name for m in types.PipelineAPIType} >= {"BASIC", "ITERATOR", "SCHEDULED"}


def test_scalar_constant():
    c = types.Constant(10)
    assert isinstance(c, types.ScalarConstant)
    assert c.value == 10
    assert c.dtype == types.INT32
    assert types.Constant(1.5).dtype == types.FLOAT
    assert types.Constant(True).dtype == types.BOOL
    u = c.uint8()
    assert u.dtype == types.UINT8 and u.value == 10
    assert types.Constant(2, types.FLOAT64).dtype == types.FLOAT64
    s = str(types.Constant(10))
    assert s.startswith("10:") and "INT32" in s


def test_constant_with_shape_is_a_node():
    from penstock import DataNode, pipeline_def

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def p():
        c = types.Constant(np.array([[1, 2], [3, 4]], dtype=np.int64))
        f = types.Constant([1.0, 2.5])
        i = types.Constant([1, 2, 3])
        assert isinstance(c, DataNode)
        return c, f, i

    c, f, i = p().run()
    # int64 arrays become int32, float lists FLOAT, int lists INT32 (§6.5)
    assert c.dtype == types.INT32 and f.dtype == types.FLOAT and i.dtype == types.INT32
    np.testing.assert_array_equal(c.at(1), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(f.at(0), np.float32([1.0, 2.5]))
    assert len(c) == 2


def _const_out(make):
    from penstock import pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return make()

    return p().run()[0]


def test_constant_explicit_dtype():
    for dt in (types.UINT8, types.INT16, types.FLOAT64, types.INT64):
        out = _const_out(lambda: types.Constant([1, 2], dtype=dt))
        assert out.dtype == dt
        np.testing.assert_array_equal(out.at(0), [1, 2])


def test_constant_conversions():
    assert _const_out(lambda: types.Constant([True, False])).dtype == types.BOOL
    assert _const_out(lambda: types.Constant([])).dtype == types.FLOAT
    assert _const_out(lambda: types.Constant(np.array([1, 2], np.uint64))).dtype == types.UINT32
    assert _const_out(lambda: types.Constant(np.array([1.5], np.float64))).dtype == types.FLOAT
    assert _const_out(lambda: types.Constant(np.array([1, 2], np.int16))).dtype == types.INT16
    with pytest.raises(Exception):
        _const_out(lambda: types.Constant(np.array([2 ** 40], np.int64)))
    out = _const_out(lambda: types.Constant(np.array([2 ** 40], np.int64), dtype=types.INT64))
    assert out.at(0).tolist() == [2 ** 40]


def test_constant_scalar_with_shape_fills():
    out = _const_out(lambda: types.Constant(7, shape=[2, 3]))
    assert out.shape() == [(2, 3), (2, 3)]
    np.testing.assert_array_equal(out.at(1), np.full((2, 3), 7))
    out = _const_out(lambda: types.Constant(1.5, layout="X", shape=[2]))
    assert out.layout() == "X" and out.dtype == types.FLOAT


def test_fn_constant():
    out = _const_out(lambda: fn.constant(idata=[1, 2, 3, 4], shape=[2, 2], dtype=types.UINT8))
    assert out.dtype == types.UINT8
    np.testing.assert_array_equal(out.at(0), [[1, 2], [3, 4]])
    out = _const_out(lambda: fn.constant(fdata=[0.5], shape=[3]))
    assert out.dtype == types.FLOAT and out.at(0).tolist() == [0.5, 0.5, 0.5]
