import numpy as np
import pytest

from penstock import fn, types

from _util import run_es


X = np.arange(24, dtype=np.int32).reshape(2, 3, 4)


def test_reshape_shape():
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, 4]), [X])
    assert out.shape() == [(6, 4)]
    np.testing.assert_array_equal(out.at(0), X.reshape(6, 4))


def test_reshape_wildcard():
    (out,) = run_es(lambda a: fn.reshape(a, shape=[-1, 2]), [X])
    np.testing.assert_array_equal(out.at(0), X.reshape(-1, 2))


def test_reshape_zero_copies_dim():
    (out,) = run_es(lambda a: fn.reshape(a, shape=[0, -1]), [X])
    assert out.shape() == [(2, 12)]


def test_reshape_layout_cleared_when_shape_changes():
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, -1]), [X], layouts=["FHW"])
    assert out.layout() == ""
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, -1], layout="AB"), [X], layouts=["FHW"])
    assert out.layout() == "AB"


def test_reshape_rel_shape():
    (out,) = run_es(lambda a: fn.reshape(a, rel_shape=[0.5, 2, 1]), [X])
    assert out.shape() == [(1, 6, 4)]
    np.testing.assert_array_equal(out.at(0).ravel(), X.ravel())


def test_reshape_volume_mismatch_errors():
    with pytest.raises(Exception):
        run_es(lambda a: fn.reshape(a, shape=[5, 5]), [X])


def test_reshape_per_sample_shape_input():
    a = [np.arange(6, dtype=np.uint8), np.arange(8, dtype=np.uint8)]
    shp = [np.array([2, 3], np.int32), np.array([4, 2], np.int32)]
    (out,) = run_es(lambda x, s: fn.reshape(x, shape=s), a, shp)
    assert out.shape() == [(2, 3), (4, 2)]
    np.testing.assert_array_equal(out.at(1), a[1].reshape(4, 2))


def test_reshape_src_dims():
    (out,) = run_es(lambda a: fn.reshape(a, src_dims=[2, 0, 1]), [np.zeros((1, 3, 4), np.uint8)])
    # src_dims selects/reorders the input extents: (4, 1, 3); data is not moved
    assert out.shape() == [(4, 1, 3)]
    (out,) = run_es(lambda a: fn.reshape(a, src_dims=[-1, 1, 2]), [np.zeros((1, 3, 4), np.uint8)])
    assert out.shape() == [(1, 3, 4)]


def test_reshape_keeps_data_order():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = run_es(lambda a: fn.reshape(a, shape=[12]), [x])
    np.testing.assert_array_equal(out.at(0), np.arange(12, dtype=np.float32))


def test_reinterpret():
    x = np.array([1, 2], np.uint32)
    (out,) = run_es(lambda a: fn.reinterpret(a, dtype=types.INT32), [x])
    assert out.dtype == types.INT32 and out.at(0).tolist() == [1, 2]


def test_squeeze_and_expand_dims():
    x = np.zeros((1, 3, 1), np.uint8)
    (sq,) = run_es(lambda a: fn.squeeze(a, axes=[0, 2]), [x])
    assert sq.shape() == [(3,)]
    (ex,) = run_es(lambda a: fn.expand_dims(a, axes=[0, 2], new_axis_names="AB"),
                   [np.zeros((3, 4), np.uint8)], layouts=["HW"])
    assert ex.shape() == [(1, 3, 1, 4)]
    assert ex.layout() == "AHBW"


def test_reshape_same_ndim_keeps_layout():
    # DALI: without `layout`, the input layout is kept if the number of dimensions matches
    (out,) = run_es(lambda a: fn.reshape(a, shape=[4, 3, 2]), [X], layouts=["FHW"])
    assert out.layout() == "FHW"
    np.testing.assert_array_equal(out.at(0), X.reshape(4, 3, 2))


def test_reshape_shape_input():
    (out,) = run_es(lambda a, s: fn.reshape(a, s), [X], [np.array([4, 6], np.int32)])
    assert out.shape() == [(4, 6)]
