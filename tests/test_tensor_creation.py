"""zeros, ones, full and their _like forms against numpy."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types

from _util import run_es, samples


def _run(graph, batch_size=2):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None)
    def pipe():
        return graph()
    return pipe().run()


def test_zeros_and_ones_default_to_int32_scalars():
    zeros, ones = _run(lambda: (fn.zeros(), fn.ones(shape=[2, 3], dtype=types.UINT8, layout="HW")))
    assert zeros.dtype == types.INT32 and [s.shape for s in samples(zeros)] == [(), ()]
    assert ones.dtype == types.UINT8 and ones.layout() == "HW"
    for s in samples(ones):
        np.testing.assert_array_equal(s, np.ones((2, 3), np.uint8))


def test_per_sample_shapes_and_every_type():
    shapes = [np.array([2, 1], np.int32), np.array([3, 4], np.int32)]
    out, = run_es(lambda s: fn.ones(shape=s, dtype=types.FLOAT16), shapes)
    assert [s.shape for s in samples(out)] == [(2, 1), (3, 4)]
    assert all((s == 1).all() and s.dtype == np.float16 for s in samples(out))
    for dtype, np_type in ((types.BOOL, np.bool_), (types.INT64, np.int64), (types.FLOAT64, np.float64)):
        out, = _run(lambda: fn.zeros(shape=[3], dtype=dtype))
        np.testing.assert_array_equal(out.at(0), np.zeros(3, np_type))
        assert out.at(0).dtype == np_type


def test_like_forms_keep_shape_and_layout():
    data = [np.full((2, 3), 7, np.uint8), np.full((4, 3), 9, np.uint8)]
    zeros, ones = run_es(lambda x: (fn.zeros_like(x), fn.ones_like(x, dtype=types.FLOAT)), data, layouts=["HW"])
    assert zeros.layout() == ones.layout() == "HW" and zeros.dtype == types.UINT8 and ones.dtype == types.FLOAT
    for d, z, o in zip(data, samples(zeros), samples(ones)):
        np.testing.assert_array_equal(z, np.zeros_like(d))
        np.testing.assert_array_equal(o, np.ones(d.shape, np.float32))


def test_full_broadcasts_per_sample_fill_values():
    fills = [np.array([[1, 2, 3]], np.uint8), np.array([[4], [5]], np.uint8)]
    out, = run_es(lambda f: fn.full(f, shape=[2, 3], layout="HW"), fills)
    assert out.dtype == types.UINT8 and out.layout() == "HW"
    for f, s in zip(fills, samples(out)):
        np.testing.assert_array_equal(s, np.broadcast_to(f, (2, 3)))
    scalars = [np.array(6.5, np.float32), np.array(-2.5, np.float32)]
    out, = run_es(lambda f: fn.full(f, shape=[4, 1, 2]), scalars)
    for f, s in zip(scalars, samples(out)):
        np.testing.assert_array_equal(s, np.full((4, 1, 2), f))
    out, = run_es(lambda f: fn.full(f), [np.array([[1, 2], [3, 4]], np.int16)] * 2)
    assert out.at(0).shape == () and out.at(0) == 1  # a scalar output takes the first fill value
    # where the output's extent is 1 (or the fill has more axes), the fill's first index is taken
    out, = run_es(lambda f: fn.full(f, shape=[3, 1]), [np.array([[1, 2]], np.int16)] * 2)
    np.testing.assert_array_equal(out.at(0), np.array([[1], [1], [1]], np.int16))


def test_full_like_converts_with_rounding_and_saturation():
    data = [np.ones((2, 3), np.uint8), np.ones((1, 3), np.uint8)]
    fills = [np.array([6.5, 300, -1], np.float32), np.array([-2.5], np.float32)]
    out, = run_es(lambda x, f: fn.full_like(x, f), data, fills, layouts=["HW", None])
    assert out.dtype == types.UINT8 and out.layout() == "HW"
    np.testing.assert_array_equal(out.at(0), np.tile(np.array([7, 255, 0], np.uint8), (2, 1)))
    np.testing.assert_array_equal(out.at(1), np.zeros((1, 3), np.uint8))


@pytest.mark.parametrize("graph, inputs, message", [
    (lambda f: fn.full(f, shape=[3, 2]), [np.array([1, 2, 3], np.uint8)], "can't be broadcast"),
    (lambda f: fn.full(f, shape=[4]), [np.zeros((3, 2), np.uint8)], "can't be broadcast"),
    (lambda f: fn.full(f, shape=[3, 2]), [np.zeros((0,), np.uint8)], "can't be broadcast"),
    (lambda f: fn.zeros_like(f, dtype=types.STRING), [np.zeros((2,), np.uint8)], "not supported"),
    (lambda f: fn.zeros(shape=[-1, 2]), [np.zeros(1)], "negative"),
    (lambda f: fn.ones(shape=[2], layout="XY"), [np.zeros(1)], "layout 'XY'"),
])
def test_errors_name_the_problem(graph, inputs, message):
    with pytest.raises(RuntimeError, match=message):
        run_es(graph, inputs)
