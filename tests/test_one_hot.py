"""one_hot against numpy."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples


def _ref(labels, k, on=1.0, off=0.0, axis=-1):
    lab = np.asarray(labels).astype(np.int64)
    out = np.full(lab.shape + (k,), off)
    for idx in np.ndindex(lab.shape):
        if 0 <= lab[idx] < k:
            out[idx + (lab[idx],)] = on
    return np.moveaxis(out, -1, axis)


def test_scalar_labels_give_vectors():
    labels = [np.array([3], np.int32), np.array([0], np.int32), np.array([9], np.int32)]
    out, = run_es(lambda x: fn.one_hot(x, num_classes=5), labels)
    assert out.dtype == types.FLOAT
    for g, lab in zip(samples(out), labels):
        np.testing.assert_array_equal(g, _ref(lab[0], 5))   # 9 is out of range: all off_value


def test_axis_values_and_dtype():
    rng = np.random.default_rng(0)
    labels = [rng.integers(-1, 4, (2, 3)).astype(np.int64) for _ in range(2)]
    out, = run_es(lambda x: fn.one_hot(x, num_classes=4, axis=0, on_value=5, off_value=-1, dtype=types.INT8),
                  labels)
    for g, lab in zip(samples(out), labels):
        assert g.dtype == np.int8 and g.shape == (4, 2, 3)
        np.testing.assert_array_equal(g, _ref(lab, 4, 5, -1, axis=0))
    out, = run_es(lambda x: fn.one_hot(x, num_classes=4, axis=1), labels)
    np.testing.assert_array_equal(out.at(0), _ref(labels[0], 4, axis=1))


def test_layout_gets_the_axis_name():
    labels = [np.array([1, 2], np.int32)]
    out, = run_es(lambda x: fn.one_hot(x, num_classes=3, axis_name="C"), labels, layouts=["W"])
    assert out.layout() == "WC"
    np.testing.assert_array_equal(out.at(0), _ref(labels[0], 3))
