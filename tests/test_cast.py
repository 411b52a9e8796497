import math

import numpy as np
import pytest

from penstock import _engine, fn, types
from penstock.types import DALIDataType as T, to_dali_type

from _util import run_es


def _cast(x, dtype):
    (out,) = run_es(lambda a: fn.cast(a, dtype=dtype), [x])
    assert out.dtype == dtype
    return out.at(0)


def test_round_half_away_from_zero():
    x = np.array([-1.5, -0.5, 0.5, 1.5, 2.5, -2.5, 0.49, -0.51], np.float32)
    np.testing.assert_array_equal(_cast(x, T.INT32), [-2, -1, 1, 2, 3, -3, 0, -1])


def test_float_to_uint8_saturates():
    x = np.array([300.7, -5.0, 254.5, 127.2, 1e10, -1e10], np.float32)
    np.testing.assert_array_equal(_cast(x, T.UINT8), [255, 0, 255, 127, 255, 0])


def test_int_narrowing_saturates():
    x = np.array([-300, 100, 300], np.int32)
    np.testing.assert_array_equal(_cast(x, T.INT8), [-128, 100, 127])
    np.testing.assert_array_equal(_cast(x, T.UINT8), [0, 100, 255])
    np.testing.assert_array_equal(_cast(np.array([-1, 70000], np.int32), T.UINT16), [0, 65535])


def test_unsigned_to_signed_saturates():
    x = np.array([0, 200, 4294967295], np.uint32)
    np.testing.assert_array_equal(_cast(x, T.INT32), [0, 200, 2147483647])
    np.testing.assert_array_equal(_cast(np.array([255], np.uint8), T.INT8), [127])


def test_bool_to_number():
    x = np.array([True, False, True])
    np.testing.assert_array_equal(_cast(x, T.FLOAT), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(_cast(x, T.INT32), [1, 0, 1])


def test_number_to_bool():
    x = np.array([0, 2, -1], np.int32)
    np.testing.assert_array_equal(_cast(x, T.BOOL), [False, True, True])


def test_int_to_float_exact():
    x = np.array([-7, 0, 123456], np.int32)
    np.testing.assert_array_equal(_cast(x, T.FLOAT), x.astype(np.float32))
    np.testing.assert_array_equal(_cast(x, T.FLOAT64), x.astype(np.float64))


def test_float64_to_float32():
    x = np.array([1.25, -3.5], np.float64)
    np.testing.assert_array_equal(_cast(x, T.FLOAT), np.float32([1.25, -3.5]))


def test_cast_keeps_shape_and_layout():
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3) + 0.5
    (out,) = run_es(lambda a: fn.cast(a, dtype=T.INT16), [x], layouts=["HWC"])
    assert out.shape() == [(2, 2, 3)]
    assert out.layout() == "HWC"
    np.testing.assert_array_equal(out.at(0), np.floor(x + 0.5).astype(np.int16))


def test_cast_vs_arithmetic_wrap():
    x = np.array([250], np.uint8)
    (w, c) = run_es(lambda a: (a + a, fn.cast(fn.cast(a, dtype=T.INT32) * 2, dtype=T.UINT8)), [x])
    assert w.at(0).tolist() == [244]
    assert c.at(0).tolist() == [255]


def test_cast_numpy_dtype_argument():
    (out,) = run_es(lambda a: fn.cast(a, dtype=np.float32), [np.array([1, 2], np.int32)])
    assert out.dtype == T.FLOAT


def test_cast_like():
    (out,) = run_es(lambda a, b: fn.cast_like(a, b), [np.array([1.6], np.float32)],
                    [np.array([0], np.int16)])
    assert out.dtype == T.INT16 and out.at(0).tolist() == [2]


def _cut_and_clamp(v, info):
    """float -> integer by truncation toward zero, clamped to the type's range; NaN -> 0."""
    if np.isnan(v):
        return 0
    return info.max if v >= info.max else info.min if v <= info.min else math.trunc(v)


@pytest.mark.parametrize("ftype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64])
def test_engine_cast_truncates_on_request(ftype, itype):
    # crop and slice convert float data this way (the crop_conversion flag); fn.cast rounds
    x = np.array([-300.7, -2.5, -1.7, -0.5, 0.5, 1.7, 2.5, 3.5, 254.9, 300.2, 4e4, np.nan, np.inf, -np.inf], ftype)
    out = np.empty(x.size, itype)
    _engine.cast(_engine.ThreadPool(1), x, int(to_dali_type(ftype)), out, int(to_dali_type(itype)),
                 crop_conversion=True)
    info = np.iinfo(itype)
    np.testing.assert_array_equal(out, np.array([_cut_and_clamp(float(v), info) for v in x], itype))


@pytest.mark.parametrize("stype", [np.float32, np.float64, np.int32, np.int64, np.uint32])
def test_engine_cast_to_float16_saturates_on_request(stype):
    # crop and slice saturate at the largest finite half (DALI); fn.cast overflows to inf
    values = [0, 3, 65519, 65520, 70000, 1_000_000]
    kind = np.dtype(stype).kind
    if kind != "u":
        values += [-v for v in values[1:]]
    if kind == "f":
        values += [np.nan, np.inf, -np.inf]
    x = np.array(values, stype)
    pool = _engine.ThreadPool(1)
    cut, plain = np.empty(x.size, np.float16), np.empty(x.size, np.float16)
    _engine.cast(pool, x, int(to_dali_type(stype)), cut, int(types.FLOAT16), crop_conversion=True)
    _engine.cast(pool, x, int(to_dali_type(stype)), plain, int(types.FLOAT16))
    wide = x.astype(np.float64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(plain, wide.astype(np.float16))
        saturated = np.where(np.isnan(wide), wide, np.clip(wide, -65504, 65504))
        np.testing.assert_array_equal(cut, saturated.astype(np.float16))
    assert np.isinf(plain).any() and np.isfinite(cut[~np.isnan(wide)]).all()
