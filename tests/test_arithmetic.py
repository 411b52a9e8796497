import operator

import numpy as np
import pytest

import penstock.math as dmath
from penstock import fn, pipeline_def, types
from penstock.types import DALIDataType as T


def _const(d):
    return lambda: d


def _run(graph, *inputs):
    """inputs: lists of per-sample numpy arrays (one list per external source)."""
    bs = len(inputs[0])

    @pipeline_def(batch_size=bs, num_threads=2, device_id=None)
    def p():
        srcs = [fn.external_source(source=_const(d)) for d in inputs]
        out = graph(*srcs)
        return out if isinstance(out, tuple) else (out,)

    return p().run()


def _arr(v, dt):
    return [np.array(v, dtype=dt)]


# ---- type promotion table (§6.2) --------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [
    (np.uint8, np.uint8, T.UINT8),
    (np.uint8, np.int8, T.INT16),
    (np.uint32, np.int32, T.INT64),
    (np.uint8, np.int32, T.INT32),
    (np.int64, np.uint32, T.INT64),
    (np.int16, np.int32, T.INT32),
    (np.uint16, np.uint32, T.UINT32),
    (np.int8, np.uint16, T.INT32),
    (np.int32, np.uint16, T.INT32),
    (np.int64, np.uint64, T.INT64),
    (np.float32, np.float64, T.FLOAT64),
    (np.int64, np.float32, T.FLOAT),
    (np.uint8, np.float64, T.FLOAT64),
    (np.bool_, np.uint8, T.UINT8),
    (np.bool_, np.float32, T.FLOAT),
])
def test_promotion_table(a, b, expected):
    out = _run(lambda x, y: x + y, _arr([1, 1], a), _arr([1, 0], b))
    assert out[0].dtype == expected
    out = _run(lambda x, y: y + x, _arr([1, 1], a), _arr([1, 0], b))
    assert out[0].dtype == expected


def test_python_literals():
    u8 = _arr([1, 2], np.uint8)
    assert _run(lambda x: x + 10, u8)[0].dtype == T.INT32
    assert _run(lambda x: 10 + x, u8)[0].dtype == T.INT32
    assert _run(lambda x: x + 1.5, u8)[0].dtype == T.FLOAT
    assert _run(lambda x: x + types.Constant(10).uint8(), u8)[0].dtype == T.UINT8
    assert _run(lambda x: x + types.Constant(1.5, T.FLOAT64), u8)[0].dtype == T.FLOAT64
    assert _run(lambda x: x + True, u8)[0].dtype == T.UINT8
    assert _run(lambda x: x + np.int16(3), u8)[0].dtype == T.INT16
    out = _run(lambda x: x + 10, u8)[0]
    assert out.at(0).tolist() == [11, 12]


def test_uint8_wraps():
    out = _run(lambda x, y: x + y, _arr([250, 10], np.uint8), _arr([250, 5], np.uint8))[0]
    assert out.dtype == T.UINT8
    assert out.at(0).tolist() == [244, 15]
    out = _run(lambda x, y: x * y, _arr([16, 3], np.uint8), _arr([16, 5], np.uint8))[0]
    assert out.at(0).tolist() == [0, 15]
    out = _run(lambda x, y: x - y, _arr([0], np.uint8), _arr([1], np.uint8))[0]
    assert out.at(0).tolist() == [255]


def test_unary_minus_wraps_and_keeps_type():
    out = _run(lambda x: -x, _arr([5, 0], np.uint8))[0]
    assert out.dtype == T.UINT8 and out.at(0).tolist() == [251, 0]
    out = _run(lambda x: +x, _arr([5, 7], np.int16))[0]
    assert out.dtype == T.INT16 and out.at(0).tolist() == [5, 7]


def test_int_division_c_semantics():
    x = _arr([-7, 7, -7, 7], np.int32)
    y = _arr([2, 2, -2, -2], np.int32)
    out = _run(lambda a, b: (a // b, a % b, a / b), x, y)
    assert out[0].dtype == T.INT32 and out[1].dtype == T.INT32
    assert out[0].at(0).tolist() == [-3, 3, 3, -3]
    assert out[1].at(0).tolist() == [-1, 1, -1, 1]
    assert out[2].dtype == T.FLOAT
    np.testing.assert_allclose(out[2].at(0), [-3.5, 3.5, 3.5, -3.5])


def test_int_division_with_literals():
    out = _run(lambda a: (a // 2, a % 2), _arr([-7, -8, 9], np.int32))
    assert out[0].at(0).tolist() == [-3, -4, 4]
    assert out[1].at(0).tolist() == [-1, 0, 1]


def test_float_floordiv_is_division_and_mod_is_fmod():
    x = _arr([1.5, -2.5, 7.0], np.float32)
    out = _run(lambda a: (a // 1, a % 1, a // 2), x)
    np.testing.assert_allclose(out[0].at(0), [1.5, -2.5, 7.0])
    np.testing.assert_allclose(out[1].at(0), np.fmod(np.float32([1.5, -2.5, 7.0]), 1))
    assert out[1].at(0)[1] == pytest.approx(-0.5)
    np.testing.assert_allclose(out[2].at(0), [0.75, -1.25, 3.5])


def test_int_true_division_gives_float():
    out = _run(lambda a, b: a / b, _arr([1, 3], np.uint8), _arr([2, 4], np.uint8))[0]
    assert out.dtype == T.FLOAT
    np.testing.assert_allclose(out.at(0), [0.5, 0.75])


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
                                operator.ge])
def test_comparisons(op):
    a = np.array([1, 2, 3, -4], np.int32)
    b = np.array([2, 2, 1, -4], np.float32)
    out = _run(lambda x, y: op(x, y), [a], [b])[0]
    assert out.dtype == T.BOOL
    np.testing.assert_array_equal(out.at(0), op(a, b))


def test_comparison_with_literal():
    out = _run(lambda x: x > 2, _arr([1, 2, 3], np.uint8))[0]
    assert out.dtype == T.BOOL and out.at(0).tolist() == [False, False, True]


def test_bitwise():
    a = np.array([0b1100, 0b1010, 255], np.uint8)
    b = np.array([0b1010, 0b0110, 1], np.uint8)
    out = _run(lambda x, y: (x & y, x | y, x ^ y, ~x, x << 1, x >> 2), [a], [b])
    np.testing.assert_array_equal(out[0].at(0), a & b)
    np.testing.assert_array_equal(out[1].at(0), a | b)
    np.testing.assert_array_equal(out[2].at(0), a ^ b)
    np.testing.assert_array_equal(out[3].at(0), ~a)
    assert out[3].dtype == T.UINT8
    # literal 1 is INT32: u8 << 1 -> INT32, no wrap
    np.testing.assert_array_equal(out[4].at(0), a.astype(np.int32) << 1)
    np.testing.assert_array_equal(out[5].at(0), a.astype(np.int32) >> 2)


def test_bool_logic():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    out = _run(lambda x, y: (x & y, x | y, x ^ y), [a], [b])
    for o, e in zip(out, (a & b, a | b, a ^ b)):
        assert o.dtype == T.BOOL
        np.testing.assert_array_equal(o.at(0), e)


@pytest.mark.parametrize("graph,symbol", [(lambda x, y: x + y, "+"), (lambda x, y: x - y, "-"),
                                          (lambda x, y: x / y, "/"), (lambda x, y: x ** y, "pow")])
def test_arithmetic_on_two_booleans_rejected(graph, symbol):  # ** is `pow` in DALI's message
    with pytest.raises(RuntimeError, match="boolean") as e:
        _run(graph, [np.array([True])], [np.array([False])])
    assert f"`{symbol}`" in str(e.value)


def test_bool_times_bool_is_logical_and():
    a, b = np.array([True, True, False]), np.array([True, False, False])
    out = _run(lambda x, y: x * y, [a], [b])[0]
    assert out.dtype == T.BOOL
    np.testing.assert_array_equal(out.at(0), a & b)


@pytest.mark.parametrize("graph", [lambda x: -x, lambda x: abs(x), dmath.sqrt, dmath.exp])
def test_math_on_a_boolean_rejected(graph):
    with pytest.raises(RuntimeError, match="cannot be a boolean"):
        _run(graph, [np.array([True, False])])


@pytest.mark.parametrize("graph", [lambda x: x & 1, lambda x: 3 | x, lambda x: ~x, lambda x: x << 1])
def test_bitwise_on_float_rejected(graph):
    with pytest.raises(RuntimeError, match="integral type"):
        _run(graph, _arr([1.0], np.float32))


def test_int_pow_with_negative_exponent_is_zero():
    """DALI: 0 for every base, 1 and -1 included (not C's 1/base**n truncated)."""
    bases = np.array([1, -1, 2, -3, 0, 7], np.int32)
    out = _run(lambda x: (x ** -1, dmath.pow(x, -2)), [bases])
    for o in out:
        assert o.dtype == T.INT32
        np.testing.assert_array_equal(o.at(0), np.zeros(6, np.int32))


def test_pow_int_stays_int():
    out = _run(lambda x, y: x ** y, _arr([2, 3, -2], np.int32), _arr([3, 2, 3], np.int32))[0]
    assert out.dtype == T.INT32
    assert out.at(0).tolist() == [8, 9, -8]


def test_reflected_operators():
    x = _arr([1.0, 2.0, 4.0], np.float32)
    out = _run(lambda a: (10 - a, 8 / a, 2 * a, 3 + a, 2 ** a), x)
    np.testing.assert_allclose(out[0].at(0), [9, 8, 6])
    np.testing.assert_allclose(out[1].at(0), [8, 4, 2])
    np.testing.assert_allclose(out[2].at(0), [2, 4, 8])
    np.testing.assert_allclose(out[3].at(0), [4, 5, 7])
    np.testing.assert_allclose(out[4].at(0), [2, 4, 16])


def test_abs_builtin():
    out = _run(lambda x: abs(x), _arr([-3, 4, -128], np.int8))[0]
    assert out.dtype == T.INT8
    assert out.at(0).tolist()[:2] == [3, 4]


# ---- math.* ---------------------------------------------------------------------------------

_X = np.array([0.25, 0.5, 0.9], np.float32)
_UNARY = {
    "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "cbrt": np.cbrt, "exp": np.exp,
    "log": np.log, "log2": np.log2, "log10": np.log10, "abs": np.abs, "fabs": np.fabs,
    "floor": np.floor, "ceil": np.ceil, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "atanh": np.arctanh,
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_math_unary(name):
    out = _run(lambda x: getattr(dmath, name)(x), [_X])[0]
    assert out.dtype == T.FLOAT
    np.testing.assert_allclose(out.at(0), _UNARY[name](_X), rtol=1e-5, atol=1e-6)


def test_math_acosh():
    x = np.array([1.0, 2.0, 10.0], np.float32)
    out = _run(lambda v: dmath.acosh(v), [x])[0]
    np.testing.assert_allclose(out.at(0), np.arccosh(x), rtol=1e-5)


def test_math_unary_int_gives_float():
    out = _run(lambda x: dmath.sqrt(x), _arr([4, 9, 2], np.uint8))[0]
    assert out.dtype == T.FLOAT
    np.testing.assert_allclose(out.at(0), np.sqrt([4, 9, 2]), rtol=1e-6)
    out = _run(lambda x: dmath.abs(x), _arr([-4, 9], np.int8))[0]
    assert out.dtype == T.INT8 and out.at(0).tolist() == [4, 9]


def test_math_binary():
    a = np.array([1.0, -2.0, 3.0], np.float32)
    b = np.array([2.0, 2.0, -1.0], np.float32)
    out = _run(lambda x, y: (dmath.min(x, y), dmath.max(x, y), dmath.atan2(x, y),
                             dmath.pow(x, y), dmath.fpow(x, y)), [a], [b])
    np.testing.assert_allclose(out[0].at(0), np.minimum(a, b))
    np.testing.assert_allclose(out[1].at(0), np.maximum(a, b))
    np.testing.assert_allclose(out[2].at(0), np.arctan2(a, b), rtol=1e-5)
    np.testing.assert_allclose(out[3].at(0), np.power(a, b), rtol=1e-5)
    np.testing.assert_allclose(out[4].at(0), np.power(a, b), rtol=1e-5)


def test_math_min_max_promote():
    out = _run(lambda x, y: (dmath.min(x, y), dmath.max(x, y)), _arr([200, 3], np.uint8),
               _arr([-5, 100], np.int8))
    assert out[0].dtype == T.INT16 and out[1].dtype == T.INT16
    assert out[0].at(0).tolist() == [-5, 3]
    assert out[1].at(0).tolist() == [200, 100]


def test_math_clamp():
    out = _run(lambda x: dmath.clamp(x, 3, 100), _arr([0, 50, 200], np.uint8))[0]
    assert out.dtype == T.INT32
    assert out.at(0).tolist() == [3, 50, 100]
    x = np.array([-1.5, 0.2, 7.0], np.float32)
    out = _run(lambda v: dmath.clamp(v, 0.0, 1.0), [x])[0]
    np.testing.assert_allclose(out.at(0), np.clip(x, 0, 1))


def test_fpow_int_is_float():
    out = _run(lambda x, y: dmath.fpow(x, y), _arr([2, 4], np.int32), _arr([2, 1], np.int32))[0]
    assert out.dtype in (T.FLOAT, T.FLOAT64)
    np.testing.assert_allclose(out.at(0), [4.0, 4.0])


# ---- broadcasting ----------------------------------------------------------------------------

def test_broadcast_per_sample_scalars():
    imgs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 1), np.float32)]
    scal = [np.array(2.0, np.float32), np.array(-1.0, np.float32)]
    out = _run(lambda x, s: x * s, imgs, scal)[0]
    np.testing.assert_allclose(out.at(0), imgs[0] * 2)
    np.testing.assert_allclose(out.at(1), imgs[1] * -1)
    assert out.shape() == [(2, 3), (3, 1)]


def test_broadcast_channel_vector():
    img = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    mean = np.array([1.0, 2.0, 3.0], np.float32)
    out = _run(lambda x, m: x - m, [img, img + 1], [mean, mean * 2])[0]
    np.testing.assert_allclose(out.at(0), img - mean)
    np.testing.assert_allclose(out.at(1), img + 1 - mean * 2)


def test_broadcast_constant_array():
    img = np.ones((2, 2, 3), np.float32)
    out = _run(lambda x: x * types.Constant(np.array([1.0, 2.0, 3.0], np.float32)), [img])[0]
    np.testing.assert_allclose(out.at(0), img * [1, 2, 3])


def test_broadcast_numpy_style():
    a = np.arange(3, dtype=np.int32).reshape(3, 1)
    b = np.arange(4, dtype=np.int32).reshape(1, 4)
    out = _run(lambda x, y: x + y, [a], [b])[0]
    np.testing.assert_array_equal(out.at(0), a + b)


def test_incompatible_shapes_error():
    with pytest.raises(Exception):
        _run(lambda x, y: x + y, [np.zeros((2, 3), np.float32)], [np.zeros((4,), np.float32)])


def test_layout_kept():
    @pipeline_def(batch_size=1, num_threads=2, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [np.ones((2, 2, 3), np.float32)], layout="HWC")
        return x * 2

    (out,) = p().run()
    assert out.layout() == "HWC"


def test_variable_shapes_in_batch():
    a = [np.arange(n, dtype=np.int32) for n in (1, 4, 2)]
    out = _run(lambda x: x * 3 + 1, a)[0]
    for i in range(3):
        np.testing.assert_array_equal(out.at(i), a[i] * 3 + 1)


def test_unsigned_compare_with_negative_literal():
    out = _run(lambda x: (x > -1, x == 255), _arr([0, 255], np.uint8))
    assert out[0].at(0).tolist() == [True, True]
    assert out[1].at(0).tolist() == [False, True]


def test_mixed_sign_values():
    out = _run(lambda a, b: (a - b, a * b), _arr([0, 4000000000], np.uint32), _arr([1, -1], np.int32))
    assert out[0].dtype == T.INT64
    assert out[0].at(0).tolist() == [-1, 4000000001]
    assert out[1].at(0).tolist() == [0, -4000000000]


def test_chained_expression_matches_numpy():
    a = np.array([1.5, -2.0, 3.25], np.float32)
    b = np.array([0.5, 4.0, -1.0], np.float32)
    out = _run(lambda x, y: (x * y - x / y) ** 2 + dmath.abs(x - 1), [a], [b])[0]
    np.testing.assert_allclose(out.at(0), (a * b - a / b) ** 2 + np.abs(a - 1), rtol=1e-6)


def test_float16_arithmetic_rejected_on_cpu():
    with pytest.raises(Exception):
        _run(lambda x: x + x, _arr([1.0], np.float16))


def test_python_float_is_float32():
    out = _run(lambda x: x + 0.1, _arr([1], np.int32))[0]
    assert out.dtype == T.FLOAT
    assert out.at(0)[0] == np.float32(1) + np.float32(0.1)


def test_clamp_with_datanode_bounds():
    x = np.array([-5.0, 0.5, 9.0], np.float32)
    lo = np.array([0.0, 0.0, 0.0], np.float32)
    hi = np.array([1.0, 1.0, 2.0], np.float32)
    out = _run(lambda a, l, h: dmath.clamp(a, l, h), [x], [lo], [hi])[0]
    np.testing.assert_allclose(out.at(0), np.clip(x, lo, hi))


def _run_with_layouts(graph, *sources):
    """sources: (array, layout) pairs, the same array for each of the 2 samples."""
    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def p():
        return graph(*[fn.external_source(source=_const([a, a]), layout=lay) for a, lay in sources])

    return p().run()


@pytest.mark.parametrize("layouts, expected", [
    (("ABCD", "CD"), "ABCD"), (("D", "ABCD"), "ABCD"), (("ABCD", None), "ABCD"), (("C", None), "C")])
def test_result_takes_the_longest_of_layouts_that_are_suffixes_of_one_another(layouts, expected):
    shapes = {"ABCD": (2, 3, 4, 5), "CD": (4, 5), "D": (5,), "C": (5,)}
    arrays = [np.ones(shapes[lay] if lay else shapes[layouts[0]], np.float32) for lay in layouts]
    (out,) = _run_with_layouts(lambda a, b: a + b, *zip(arrays, layouts))
    assert out.layout() == expected and out.at(0).shape == shapes[expected]


def test_a_layout_of_more_dimensions_than_the_result_is_dropped():
    # a 4-D operand without a layout and a 1-D "C": the result has 4 dimensions, no layout
    (out,) = _run_with_layouts(lambda a, b: a * b, (np.ones((2, 3, 4, 5), np.float32), None),
                               (np.ones(5, np.float32), "C"))
    assert out.layout() == "" and out.at(0).shape == (2, 3, 4, 5)


@pytest.mark.parametrize("layouts", [("ABCD", "ABC"), ("X", "ABCD"), ("HW", "WH")])
def test_layouts_that_do_not_agree_are_an_error(layouts):
    arrays = [np.ones((4,) * len(lay), np.float32) for lay in layouts]
    with pytest.raises(RuntimeError, match="They must be equal or one must be a suffix of the other"):
        _run_with_layouts(lambda a, b: a - b, *zip(arrays, layouts))


def test_shapes_that_do_not_broadcast_name_the_conflicting_dimension():
    with pytest.raises(RuntimeError, match=r"Can't broadcast shapes:\n2 x 3 x 4 \(d=2, belonging to sample_idx=0\)\n"
                                           r"2 x 3 x 3 \(d=2, belonging to sample_idx=0\)"):
        _run(lambda x, y: x + y, [np.zeros((2, 3, 4), np.float32)], [np.zeros((2, 3, 3), np.float32)])


@pytest.mark.parametrize("graph", [lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x // 0])
def test_integer_division_by_zero_is_an_error(graph):
    with pytest.raises(ValueError, match="Integer division by zero"):
        _run(graph, _arr([4, 5], np.int32), _arr([2, 0], np.int32))


def test_clamp_promotes_over_its_three_operands_and_broadcasts_them():
    x = np.array([[-5, 0, 5], [1, 2, 3]], np.int8)
    out = _run(lambda v, lo, hi: dmath.clamp(v, lo, hi), [x], _arr([-1, 1, 2], np.int32), _arr([[3], [2]], np.int16))[0]
    assert out.dtype == T.INT32
    np.testing.assert_array_equal(out.at(0), np.clip(x, [-1, 1, 2], [[3], [2]]))


@pytest.mark.parametrize("graph, word", [(lambda x, y: dmath.clamp(x, y, y), "clamp"),
                                         (lambda x, y: dmath.min(x, y), "min"),
                                         (lambda x, y: dmath.atan2(x, y), "atan2"),
                                         (lambda x, y: dmath.fabs(x), "fabs")])
def test_math_functions_refuse_booleans(graph, word):
    with pytest.raises(RuntimeError, match=f"to arithmetic operator `{word}` cannot be "):
        _run(graph, _arr([True], np.bool_), _arr([False], np.bool_))


def test_fabs_of_integers_is_float():
    out = _run(lambda x: dmath.fabs(x), _arr([-3, 2], np.int16))[0]
    assert out.dtype == T.FLOAT
    np.testing.assert_array_equal(out.at(0), [3.0, 2.0])


def test_boolean_shifts_are_those_of_0_and_1():
    a, b = np.array([True, False, True, False]), np.array([False, False, True, True])
    right, left = _run(lambda x, y: (x >> y, x << y), [a], [b])
    np.testing.assert_array_equal(right.at(0), a & ~b)
    np.testing.assert_array_equal(left.at(0), a)


def test_ten_dimensions_broadcast_in_up_to_six_runs_of_dimensions():
    rng = np.random.default_rng(3)
    a = rng.random((2, 1, 1, 1, 3, 1, 2, 2, 3, 1), dtype=np.float32)
    b = rng.random((1, 2, 3, 2, 1, 2, 1, 1, 1, 3), dtype=np.float32)
    c = rng.random((3,), dtype=np.float32)
    total, clamped = _run(lambda x, y, z: (x + y, dmath.clamp(x, y, z)), [a], [b], [c])
    np.testing.assert_array_equal(total.at(0), a + b)
    np.testing.assert_array_equal(clamped.at(0), np.minimum(np.maximum(a, b), c))


def test_more_than_six_runs_of_broadcast_dimensions_are_refused_in_dalis_words():
    a = np.ones((2, 1) * 5, np.float32)
    with pytest.raises(RuntimeError, match="Broadcasting pattern too complex.*Got 10 groups"):
        _run(lambda x, y: x + y, [a], [a.reshape((1, 2) * 5)])


@pytest.mark.parametrize("graph, words", [
    (lambda x: x + [x], "The input 1 of operator `+` must be a `DataNode` or a compatible constant. "
                        "Got a `list` with nested `DataNode`(s)."),
    (lambda x: dmath.max((x, x), 5), "The input 0 of operator `max` must be a `DataNode`"),
    (lambda x: x + [[x]], "Unexpected type: <class 'list'>"),
    (lambda x: x + [1, "two"], "Unexpected type: <class 'str'>"),
])
def test_lists_holding_data_nodes_are_not_operands(graph, words):
    with pytest.raises(TypeError) as err:
        _run(graph, [np.ones(3, np.float32)])
    assert words in str(err.value)
