import numpy as np
import pytest

import penstock
from penstock import fn, newaxis

from _util import run_es

X = np.arange(60, dtype=np.int32).reshape(3, 4, 5)


def _sub(f, x=X, **kw):
    (out,) = run_es(f, [x], **kw)
    return out


def test_integer_index_drops_dim():
    np.testing.assert_array_equal(_sub(lambda a: a[1]).at(0), X[1])
    np.testing.assert_array_equal(_sub(lambda a: a[1, 2]).at(0), X[1, 2])
    np.testing.assert_array_equal(_sub(lambda a: a[0, 1, 2]).at(0), X[0, 1, 2])


def test_negative_indices():
    np.testing.assert_array_equal(_sub(lambda a: a[-1]).at(0), X[-1])
    np.testing.assert_array_equal(_sub(lambda a: a[:, -2]).at(0), X[:, -2])
    np.testing.assert_array_equal(_sub(lambda a: a[-3:-1]).at(0), X[-3:-1])


def test_slices():
    np.testing.assert_array_equal(_sub(lambda a: a[1:3]).at(0), X[1:3])
    np.testing.assert_array_equal(_sub(lambda a: a[:, 1:]).at(0), X[:, 1:])
    np.testing.assert_array_equal(_sub(lambda a: a[:, :, :2]).at(0), X[:, :, :2])
    np.testing.assert_array_equal(_sub(lambda a: a[::2, 1::2]).at(0), X[::2, 1::2])


def test_slice_out_of_range_clamps():
    np.testing.assert_array_equal(_sub(lambda a: a[1:100]).at(0), X[1:100])


def test_newaxis():
    out = _sub(lambda a: a[newaxis])
    assert out.shape() == [(1, 3, 4, 5)]
    out = _sub(lambda a: a[:, None])
    np.testing.assert_array_equal(out.at(0), X[:, None])


def test_newaxis_named_layout():
    out = _sub(lambda a: a[newaxis("F")], layouts=["HWC"])
    assert out.shape() == [(1, 3, 4, 5)]
    assert out.layout() == "FHWC"


def test_layout_of_index_result():
    out = _sub(lambda a: a[1], layouts=["HWC"])
    assert out.layout() == "WC"
    out = _sub(lambda a: a[1:3], layouts=["HWC"])
    assert out.layout() == "HWC"


def test_out_of_range_index_errors():
    with pytest.raises(Exception):
        _sub(lambda a: a[3])
    with pytest.raises(Exception):
        _sub(lambda a: a[-4])


def test_too_many_indices_errors():
    with pytest.raises(Exception):
        _sub(lambda a: a[0, 0, 0, 0])


def test_full_range_still_checks_ndim():
    with pytest.raises(Exception):
        _sub(lambda a: a[:, :, :, :])
    np.testing.assert_array_equal(_sub(lambda a: a[:, :, :]).at(0), X)


def test_ellipsis_not_supported():
    with pytest.raises(NotImplementedError):
        _sub(lambda a: a[..., 0])


def test_bad_index_types():
    with pytest.raises(TypeError):
        _sub(lambda a: a[1.5])
    with pytest.raises(TypeError):
        _sub(lambda a: a["x"])


def test_datanode_bounds():
    xs = [np.arange(10, dtype=np.int32), np.arange(10, 20, dtype=np.int32)]
    lo = [np.array(2, np.int32), np.array(5, np.int32)]
    hi = [np.array(4, np.int32), np.array(9, np.int32)]
    (out,) = run_es(lambda a, l, h: a[l:h], xs, lo, hi)
    np.testing.assert_array_equal(out.at(0), xs[0][2:4])
    np.testing.assert_array_equal(out.at(1), xs[1][5:9])


def test_datanode_index():
    xs = [np.arange(10, dtype=np.int32), np.arange(10, 20, dtype=np.int32)]
    idx = [np.array(3, np.int32), np.array(-1, np.int32)]
    (out,) = run_es(lambda a, i: a[i], xs, idx)
    assert out.at(0).tolist() == 3 and out.at(1).tolist() == 19
    assert out.shape() == [(), ()]


def test_per_sample_shapes():
    xs = [np.arange(6, dtype=np.uint8).reshape(2, 3), np.arange(20, dtype=np.uint8).reshape(4, 5)]
    (out,) = run_es(lambda a: a[-1, 1:], xs)
    np.testing.assert_array_equal(out.at(0), xs[0][-1, 1:])
    np.testing.assert_array_equal(out.at(1), xs[1][-1, 1:])


_INDEXES = [
    (0,), (-1,), (slice(None), 0), (slice(1, None), -2), (slice(None, None, 2),),
    (slice(None), slice(None), slice(1, 4, 2)), (1, slice(None), 2), (slice(-2, None), slice(None, -1)),
    (None, 1), (slice(None), None, 0), (2, None), (slice(0, 3, 2), None, slice(None), None),
    (-3, -4, -5), (slice(None, None, -1),), (slice(None), slice(3, 0, -1)),
]


@pytest.mark.parametrize("index", _INDEXES, ids=[str(i) for i in range(len(_INDEXES))])
def test_matches_numpy(index):
    out = _sub(lambda a: a[index])
    np.testing.assert_array_equal(out.at(0), X[index])
    assert out.shape() == [X[index].shape]


def test_datanode_index_layout():
    xs = [X]
    (out,) = run_es(lambda a, i: a[i], xs, [np.array(1, np.int32)], layouts=["HWC", None])
    assert out.layout() == "WC"
    np.testing.assert_array_equal(out.at(0), X[1])


def test_datanode_step_and_mixed():
    xs = [np.arange(12, dtype=np.int32).reshape(3, 4)]
    (out,) = run_es(lambda a, s, i: a[i, ::s], xs, [np.array(2, np.int32)], [np.array(-1, np.int32)])
    np.testing.assert_array_equal(out.at(0), xs[0][-1, ::2])
