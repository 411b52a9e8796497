import numpy as np

from penstock import fn, types

from _util import run_es


def test_copy_identity_all_types():
    for dt in (np.uint8, np.int16, np.float32, np.float64, np.bool_):
        xs = [np.arange(6).reshape(2, 3).astype(dt), np.arange(3).astype(dt).reshape(1, 3)]
        (out,) = run_es(lambda a: fn.copy(a), xs, layouts=["HW"])
        assert out.dtype == types.to_dali_type(dt)
        assert out.layout() == "HW"
        for i in range(2):
            np.testing.assert_array_equal(out.at(i), xs[i])


def test_copy_is_new_buffer():
    x = np.arange(4, dtype=np.int32)
    (a, b) = run_es(lambda v: (v, fn.copy(v)), [x])
    assert a.data_ptr() != b.data_ptr()
    np.testing.assert_array_equal(a.at(0), b.at(0))
