import re

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


def test_reshape_zero_extent_is_refused():
    with pytest.raises(RuntimeError, match="Extent of 0 is illegal; got: 0 x 0"):  # DALI 2.4 (and its words)
        run_es(lambda a: fn.reshape(a, shape=[0, -1]), [X])


def test_reshape_layout_cleared_when_shape_changes():
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, -1]), [X], layouts=["FHW"])
    assert out.layout() == ""
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, -1], layout="AB"), [X], layouts=["FHW"])
    assert out.layout() == "AB"


def test_reshape_rel_shape():
    (out,) = run_es(lambda a: fn.reshape(a, rel_shape=[0.5, 2, 1]), [X])
    assert out.shape() == [(1, 6, 4)]
    np.testing.assert_array_equal(out.at(0).ravel(), X.ravel())


@pytest.mark.parametrize("shape, rel, expected", [
    ((4, 6), [-1, 1], (4, 6)),
    ((4, 6), [-1, 0.5], (8, 3)),      # 24 / (6 * 0.5)
    ((4, 6), [2, -1], (8, 3)),        # 24 / (4 * 2)
    ((4, 6), [-1], (24,)),
    ((2, 3, 4), [1, -1], (2, 12)),    # fewer entries than dims: the volume of all of them
    ((0, 6), [-1, 1], (0, 6)),        # an empty sample: 0 / 6
    ((5, 6), [0.5, -1], (3, 10)),     # 2.5 rounds half up to 3, then 30 / 3
])
def test_reshape_rel_shape_infers_a_negative_extent(shape, rel, expected):
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    (out,) = run_es(lambda a: fn.reshape(a, rel_shape=rel), [x])
    assert out.shape() == [expected]
    np.testing.assert_array_equal(out.at(0).ravel(), x.ravel())


def test_reshape_rel_shape_per_sample_with_negative_extent():
    xs = [np.arange(24, dtype=np.uint8).reshape(4, 6), np.arange(12, dtype=np.uint8).reshape(2, 6)]
    rels = [np.array([-1, 2], np.float32), np.array([2, -1], np.float32)]
    (out,) = run_es(lambda x, r: fn.reshape(x, rel_shape=r), xs, rels)
    assert out.shape() == [(2, 12), (4, 3)]


@pytest.mark.parametrize("shape, rel, message", [  # DALI's words
    ((4, 6), [-1, -1], "Only one negative extent is allowed"),
    ((4, 6), [-1, 0], "Extent of 0 is illegal"),
    ((4, 6), [0.5, 0], "Extent of 0 is illegal"),
    ((4, 0), [-1, 1], "Cannot infer the extent of dimension 0 when the volume of remaining dimensions is 0. "
                      "Input shape: 4 x 0"),
    ((4, 6), [-1, 0.01], "Cannot infer the extent of dimension 0"),  # 0.06 rounds to 0
    ((4, 6), [-1, 1.5], "Input and output samples must occupy the same size in bytes"),  # 24 // 9 = 2: 2 x 9 != 24
])
def test_reshape_rel_shape_negative_extent_errors(shape, rel, message):
    with pytest.raises(RuntimeError, match=message):
        run_es(lambda a: fn.reshape(a, rel_shape=rel), [np.zeros(shape, np.float32)])


def test_reshape_rel_shape_per_sample_negative_extent_errors():
    with pytest.raises(RuntimeError, match="Only one negative extent is allowed"):
        run_es(lambda x, r: fn.reshape(x, rel_shape=r), [np.zeros((4, 6), np.float32)],
               [np.array([-1, -1], np.float32)])


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


EXCLUSIVE = "Shape input, `shape` argument and `rel_shape` argument are mutually exclusive"


@pytest.mark.parametrize("graph, message", [  # DALI's words
    (lambda a: fn.reshape(a, shape=[6, 4], rel_shape=[1, 1]), EXCLUSIVE),
    (lambda a: fn.reshape(a, fn.shapes(a), rel_shape=[1, 1]), EXCLUSIVE),
    (lambda a: fn.reshape(a, fn.shapes(a), shape=[6, 4]), EXCLUSIVE),
    (lambda a: fn.reshape(a, rel_shape=[]), "'rel_shape' is an empty list"),
    (lambda a: fn.reshape(a, src_dims=[2, 3]), r"`src_dims\[0\] == 2` is out of bounds. The indices in `src_dims` "
                                               r"should be either valid dimension indices in range \[0..1\]"),
    (lambda a: fn.reshape(a, src_dims=[-2, 0]), r"`src_dims\[0\] == -2` is out of bounds"),
    # checked even where 'shape' makes src_dims unused
    (lambda a: fn.reshape(a, shape=[6, 4], src_dims=[2]), r"`src_dims\[0\] == 2` is out of bounds"),
    (lambda a: fn.reshape(a, src_dims=[1, 0], rel_shape=[1]), "`src_dims` and `rel_shape` have different lengths: 2 vs 1"),
])
def test_reshape_argument_errors(graph, message):
    with pytest.raises(RuntimeError, match=message):
        run_es(graph, [np.zeros((4, 6), np.float32)])


def test_reshape_src_dims_unused_with_shape():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (out,) = run_es(lambda a: fn.reshape(a, shape=[6, 4], src_dims=[1, 0]), [x])
    assert out.shape() == [(6, 4)]
    np.testing.assert_array_equal(out.at(0), x.reshape(6, 4))


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


# ---- squeeze / expand_dims corners (behaviour checked against DALI 2.4) -----------------------

def test_expand_dims_names_follow_the_order_of_axes():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    (out,) = run_es(lambda a: fn.expand_dims(a, axes=[2, 0], new_axis_names="AB"), [x], layouts=["HW"])
    # axes[0] = 2 is named A, axes[1] = 0 is named B
    assert out.layout() == "BHAW" and out.shape() == [(1, 2, 1, 3)]
    np.testing.assert_array_equal(out.at(0), x[None, :, None, :])


def test_expand_dims_layouts_zero_d_empty_axes_and_empty_samples():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    (unnamed,) = run_es(lambda a: fn.expand_dims(a, axes=[2]), [x], layouts=["HW"])
    assert unnamed.layout() == "" and unnamed.shape() == [(2, 3, 1)]
    (same,) = run_es(lambda a: fn.expand_dims(a, axes=[]), [x], layouts=["HW"])
    assert same.layout() == "HW" and same.shape() == [(2, 3)]
    (scalar,) = run_es(lambda a: fn.expand_dims(a, axes=[0, 1], new_axis_names="AB"), [np.array(5, np.int32)])
    assert scalar.layout() == "AB" and scalar.shape() == [(1, 1)] and scalar.at(0).item() == 5
    (empty,) = run_es(lambda a: fn.expand_dims(a, axes=[1]), [np.zeros((0, 3), np.int32), x], layouts=["HW"])
    assert empty.shape() == [(0, 1, 3), (2, 1, 3)]


@pytest.mark.parametrize("kwargs, layout, message", [  # DALI's words, which code written for DALI matches
    ({"axes": [-1]}, "HW", "Axis value can't be negative"),
    ({"axes": [3]}, "HW", "Data has not enough dimensions to add new axes at specified indices."),
    ({"axes": [0, 0]}, "HW", "more than once"),
    ({"axes": [0, 1], "new_axis_names": "A"}, "HW",
     "Specified 2 new dimensions, but layout contains only 1 new dimension names"),
    ({"axes": [0], "new_axis_names": "A"}, None,
     "Specifying ``new_axis_names`` requires an input with a proper layout."),
])
def test_expand_dims_errors(kwargs, layout, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        run_es(lambda a: fn.expand_dims(a, **kwargs), [np.zeros((2, 3), np.int32)], layouts=[layout])


def test_squeeze_by_names_to_zero_d_and_empty_samples():
    x = np.arange(3, dtype=np.int32).reshape(1, 3, 1)
    (out,) = run_es(lambda a: fn.squeeze(a, axis_names="CA"), [x], layouts=["ABC"])
    assert out.layout() == "B" and out.shape() == [(3,)]
    np.testing.assert_array_equal(out.at(0), x.reshape(3))
    (same,) = run_es(lambda a: fn.squeeze(a, axes=[]), [x], layouts=["ABC"])
    assert same.layout() == "ABC" and same.shape() == [(1, 3, 1)]
    (scalar,) = run_es(lambda a: fn.squeeze(a, axes=[0]), [np.array([7], np.int32)], layouts=["A"])
    assert scalar.layout() == "" and scalar.shape() == [()] and scalar.at(0).item() == 7
    (empty,) = run_es(lambda a: fn.squeeze(a, axes=[1]), [np.zeros((0, 1), np.int32), np.ones((2, 1), np.int32)],
                      layouts=["HC"])
    assert empty.layout() == "H" and empty.shape() == [(0,), (2,)]
    # a non-unit dim may go when the sample is empty before and after
    (zero,) = run_es(lambda a: fn.squeeze(a, axes=[0]), [np.zeros((0, 0, 1), np.int32)], layouts=["ABC"])
    assert zero.shape() == [(0, 1)] and zero.layout() == "BC"


@pytest.mark.parametrize("kwargs, shape, layout, message", [
    ({"axes": [0]}, (3, 1), "HC", "only dimensions of extent 1"),
    ({"axes": [0]}, (0, 1), "HC", "only dimensions of extent 1"),   # volume 0 -> 1
    ({"axes": [2]}, (3, 1), "HC", "out of range"),
    ({"axes": [-1]}, (3, 1), "HC", "out of range"),
    # DALI's words, which code written for DALI matches
    ({"axes": [0]}, (3, 1), "HC", "Requested a shape with 1 elements but the original shape has 3 elements."),
    ({"axes": [1, 1]}, (3, 1), "HC", "Specified at least twice same dimension to remove."),
    ({"axis_names": "W"}, (3, 1), "HC", "Axis 'W' is not present in the input layout"),
    ({"axis_names": "C"}, (3, 1), None, "Axis 'C' is not present in the input layout"),
    ({"axes": [1], "axis_names": "C"}, (3, 1), "HC", "Provided both ``axes`` and ``axis_names`` arguments"),
    ({}, (3, 1), "HC", "give 'axes' or 'axis_names'"),
])
def test_squeeze_errors(kwargs, shape, layout, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        run_es(lambda a: fn.squeeze(a, **kwargs), [np.zeros(shape, np.int32)], layouts=[layout])


def test_squeeze_error_names_the_sample():
    with pytest.raises(RuntimeError, match=r"sample 1 of shape \(2, 2\)"):
        run_es(lambda a: fn.squeeze(a, axes=[1]), [np.zeros((3, 1), np.int32), np.zeros((2, 2), np.int32)])


def test_rel_shape_is_relative_to_the_input_dims_src_dims_maps():
    # DALI 2.4: output dim k is rel_shape[k] times input dim src_dims[k]; -1 infers from the volume
    (out,) = run_es(lambda a: fn.reshape(a, src_dims=[2, 0, 1], rel_shape=[0.5, 0.5, -1]),
                    [np.zeros((20, 30, 10), np.uint8)])
    assert out.shape() == [(5, 10, 120)]


def test_a_shape_input_may_infer_an_extent_and_reinterpret_infers_in_bytes():
    x = np.arange(24, dtype=np.uint8).reshape(2, 12)
    (out,) = run_es(lambda a: fn.reshape(a, fn.python_function(a, function=lambda s: np.int32([s.shape[0], -1]))),
                    [x])
    assert out.shape() == [(2, 12)]
    (out,) = run_es(lambda a: fn.reinterpret(a, shape=[-1, 2], dtype=types.INT16), [x])
    assert out.shape() == [(6, 2)] and out.dtype == types.INT16
    np.testing.assert_array_equal(out.at(0), x.view(np.int16).reshape(6, 2))
    with pytest.raises(RuntimeError, match="The size, in bytes, of the innermost dimension is not divisible"):
        run_es(lambda a: fn.reinterpret(a, dtype=types.INT32), [np.zeros((4, 6), np.uint8)])


def test_per_sample_src_dims_and_squeeze_axes():
    data = [np.arange(24, dtype=np.float32).reshape(4, 6), np.arange(12, dtype=np.float32).reshape(2, 6)]
    dims = [np.array([1, 0], np.int32), np.array([0, 1], np.int32)]
    out, rel = run_es(lambda a, d: (fn.reshape(a, src_dims=d), fn.reshape(a, src_dims=d, rel_shape=[0.5, 2])),
                      data, dims, layouts=["AB", None])
    assert [out.at(i).shape for i in range(2)] == [(6, 4), (2, 6)]
    assert [rel.at(i).shape for i in range(2)] == [(3, 8), (1, 12)]  # each sample's own dims scaled
    assert out.layout() == "AB"  # the number of dims kept: the input's layout
    out, = run_es(lambda a, d: fn.reshape(a, src_dims=d), data, [np.array([-1, 0, 1], np.int32)] * 2,
                  layouts=["AB", None])
    assert out.at(0).shape == (1, 4, 6) and out.layout() == ""
    units = [np.zeros((1, 3, 4), np.float32), np.zeros((3, 1, 4), np.float32)]
    out, = run_es(lambda a, ax: fn.squeeze(a, axes=ax), units, [np.array([0], np.int32), np.array([1], np.int32)],
                  layouts=["ABC", None])
    assert [out.at(i).shape for i in range(2)] == [(3, 4), (3, 4)] and out.layout() == ""  # different dims gone
    out, = run_es(lambda a, ax: fn.squeeze(a, axes=ax), [units[0]] * 2, [np.array([0], np.int32)] * 2,
                  layouts=["ABC", None])
    assert out.layout() == "BC"
    with pytest.raises(ValueError, match="as many dims"):
        run_es(lambda a, ax: fn.squeeze(a, axes=ax), units, [np.array([0], np.int32), np.array([0, 1], np.int32)])
