import numpy as np

from penstock import fn

from _util import run_es

X = np.arange(24, dtype=np.int16).reshape(2, 3, 4)


def test_transpose_perm():
    (out,) = run_es(lambda a: fn.transpose(a, perm=[2, 0, 1]), [X])
    np.testing.assert_array_equal(out.at(0), X.transpose(2, 0, 1))
    assert out.shape() == [(4, 2, 3)]


def test_transpose_default_reverses():
    (out,) = run_es(lambda a: fn.transpose(a), [X])
    np.testing.assert_array_equal(out.at(0), X.T)


def test_transpose_layout_permuted():
    (out,) = run_es(lambda a: fn.transpose(a, perm=[0, 2, 1]), [X], layouts=["FHW"])
    assert out.layout() == "FWH"
    (out,) = run_es(lambda a: fn.transpose(a, perm=[2, 0, 1]), [X], layouts=["HWC"])
    assert out.layout() == "CHW"


def test_transpose_layout_flags():
    (out,) = run_es(lambda a: fn.transpose(a, perm=[2, 0, 1], transpose_layout=False), [X],
                    layouts=["HWC"])
    assert out.layout() == "HWC"
    (out,) = run_es(lambda a: fn.transpose(a, perm=[2, 0, 1], output_layout="XYZ"), [X],
                    layouts=["HWC"])
    assert out.layout() == "XYZ"


def test_transpose_variable_shapes():
    xs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(20, dtype=np.float32).reshape(4, 5)]
    (out,) = run_es(lambda a: fn.transpose(a, perm=[1, 0]), xs)
    for i in range(2):
        np.testing.assert_array_equal(out.at(i), xs[i].T)


def test_transpose_4d():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.uint8).reshape(2, 3, 4, 5)
    (out,) = run_es(lambda a: fn.transpose(a, perm=[3, 1, 0, 2]), [x])
    np.testing.assert_array_equal(out.at(0), x.transpose(3, 1, 0, 2))
