import numpy as np
import pytest

from penstock import fn

from _util import run_es

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.arange(6, 12, dtype=np.float32).reshape(2, 3)


def test_cat_axis0_keeps_layout():
    (out,) = run_es(lambda a, b: fn.cat(a, b), [A], [B], layouts=["HW", "HW"])
    np.testing.assert_array_equal(out.at(0), np.concatenate([A, B], 0))
    assert out.layout() == "HW"


def test_cat_axis1():
    (out,) = run_es(lambda a, b: fn.cat(a, b, axis=1), [A], [B])
    np.testing.assert_array_equal(out.at(0), np.concatenate([A, B], 1))


def test_cat_axis_name():
    (out,) = run_es(lambda a, b: fn.cat(a, b, axis_name="W"), [A], [B], layouts=["HW", "HW"])
    np.testing.assert_array_equal(out.at(0), np.concatenate([A, B], 1))
    assert out.layout() == "HW"


def test_cat_different_extents():
    c = np.zeros((1, 3), np.float32)
    (out,) = run_es(lambda a, b: fn.cat(a, b), [A], [c])
    assert out.shape() == [(3, 3)]


def test_cat_mismatch_errors():
    with pytest.raises(Exception):
        run_es(lambda a, b: fn.cat(a, b, axis=0), [A], [np.zeros((2, 4), np.float32)])


def test_stack_new_axis_drops_layout():
    (out,) = run_es(lambda a, b: fn.stack(a, b), [A], [B], layouts=["HW", "HW"])
    np.testing.assert_array_equal(out.at(0), np.stack([A, B], 0))
    assert out.layout() == ""


def test_stack_axis_and_name():
    (out,) = run_es(lambda a, b: fn.stack(a, b, axis=2, axis_name="C"), [A], [B],
                    layouts=["HW", "HW"])
    np.testing.assert_array_equal(out.at(0), np.stack([A, B], 2))
    assert out.layout() == "HWC"
    (out,) = run_es(lambda a, b: fn.stack(a, b, axis=1), [A], [B])
    np.testing.assert_array_equal(out.at(0), np.stack([A, B], 1))


def test_stack_three_inputs():
    (out,) = run_es(lambda a, b, c: fn.stack(a, b, c), [A], [B], [A + B])
    np.testing.assert_array_equal(out.at(0), np.stack([A, B, A + B]))


def test_stack_shape_mismatch_errors():
    with pytest.raises(Exception):
        run_es(lambda a, b: fn.stack(a, b), [A], [np.zeros((3, 2), np.float32)])
