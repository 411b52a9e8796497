"""reductions.* against numpy: axes, keep_dims, default output types, ragged batches."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples

RNG = np.random.default_rng(0)
RAGGED = [RNG.integers(0, 200, s).astype(np.uint8) for s in [(4, 5, 3), (2, 7, 3), (4, 5, 3)]]


@pytest.mark.parametrize("name,ref,dtype", [
    ("sum", lambda x, a, k: x.sum(axis=a, keepdims=k, dtype=np.uint64), np.uint64),
    ("mean", lambda x, a, k: x.mean(axis=a, keepdims=k), np.float32),
    ("mean_square", lambda x, a, k: (x.astype(np.float64) ** 2).mean(axis=a, keepdims=k), np.float32),
    ("rms", lambda x, a, k: np.sqrt((x.astype(np.float64) ** 2).mean(axis=a, keepdims=k)), np.float32),
    ("min", lambda x, a, k: x.min(axis=a, keepdims=k), np.uint8),
    ("max", lambda x, a, k: x.max(axis=a, keepdims=k), np.uint8)])
@pytest.mark.parametrize("axes,keep", [(None, False), ((0, 1), False), ((2,), True), ((-1, 0), False)])
def test_reductions_match_numpy(name, ref, dtype, axes, keep):
    op = getattr(fn.reductions, name)
    out, = run_es(lambda x: op(x, axes=axes, keep_dims=keep), RAGGED, layouts=["HWC"])
    for g, x in zip(samples(out), RAGGED):
        want = ref(x, None if axes is None else tuple(a % 3 for a in axes), keep)
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, rtol=1e-5)


def test_axis_names_layout_and_dtype():
    out, = run_es(lambda x: fn.reductions.sum(x, axis_names="HW", dtype=types.FLOAT), RAGGED, layouts=["HWC"])
    assert out.layout() == "C" and out.at(0).dtype == np.float32
    np.testing.assert_allclose(out.at(1), RAGGED[1].sum(axis=(0, 1)), rtol=1e-6)
    x = [np.array([1.5, -2.0], np.float64)]
    out, = run_es(lambda d: fn.reductions.mean(d), x)
    assert out.at(0).dtype == np.float64 and out.at(0).shape == ()


@pytest.mark.parametrize("ddof", [0, 1])
def test_variance_and_std_dev_take_the_mean(ddof):
    def g(x):
        m = fn.reductions.mean(x, axes=(0, 1), keep_dims=True)
        return (fn.reductions.variance(x, m, axes=(0, 1), ddof=ddof),
                fn.reductions.std_dev(x, fn.reductions.mean(x, axes=(0, 1)), axes=(0, 1), ddof=ddof))

    var, std = run_es(g, RAGGED, layouts=["HWC"])
    for v, s, x in zip(samples(var), samples(std), RAGGED):
        np.testing.assert_allclose(v, x.astype(np.float64).var(axis=(0, 1), ddof=ddof), rtol=1e-5)
        np.testing.assert_allclose(s, x.astype(np.float64).std(axis=(0, 1), ddof=ddof), rtol=1e-5)


# ---- the native batch kernel (_engine.reduce, GpuKernels.reduce's CPU sibling) ----------------

KINDS = ["sum", "mean", "mean_square", "rms", "min", "max", "variance", "std_dev"]


def _numpy_reduce(kind, x, axes, out_dtype, mean=None):
    wide = x.astype(np.float64)
    if kind == "sum":
        return x.sum(axis=axes, dtype=np.float64 if out_dtype.kind == "f" else out_dtype)
    if kind in ("min", "max"):
        return getattr(x, kind)(axis=axes)
    if kind in ("variance", "std_dev"):
        v = ((wide - mean) ** 2).sum(axis=axes) / (np.prod([x.shape[a] for a in axes]) - 1)
        return np.sqrt(v) if kind == "std_dev" else v
    sq = wide ** 2 if kind in ("mean_square", "rms") else wide
    r = sq.mean(axis=axes)
    return np.sqrt(r) if kind == "rms" else r


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float16, np.float64, np.bool_])
def test_reduce_kernel_matches_numpy(kind, dtype):
    from penstock import _engine
    from kernel_batch import POOL, pack, unpack
    rng = np.random.default_rng(3)
    xs = [(rng.random(s) * 50 - (0 if dtype in (np.uint8, np.bool_) else 20)).astype(dtype)
          for s in [(3, 4, 5), (2, 1, 5), (1, 6, 2)]]
    axes = (0, 2)
    out_dtype = np.dtype(dtype if kind in ("min", "max") else np.int32 if kind == "sum" else np.float32)
    src, shapes, offsets = pack(xs)
    out_shapes = shapes[:, [1]]
    dst_offsets = np.concatenate([[0], np.cumsum(out_shapes[:, 0])[:-1]]).astype(np.int64)
    dst = np.zeros(int(out_shapes.sum()), out_dtype)
    means = [x.astype(np.float64).mean(axis=axes, keepdims=True) for x in xs]
    mean = np.concatenate([m.reshape(-1) for m in means]) if kind in ("variance", "std_dev") else None
    _engine.reduce(POOL, KINDS.index(kind), src, shapes, offsets, axes, dst, dst_offsets,
                   1 if mean is not None else 0, mean, dst_offsets if mean is not None else None)
    for got, x, m in zip(unpack(dst, out_shapes, dst_offsets), xs, means):
        want = _numpy_reduce(kind, x, axes, out_dtype, m).astype(out_dtype)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6)


def test_reduce_kernel_wraps_integer_sums_and_propagates_nan():
    from penstock import _engine
    from kernel_batch import POOL, pack
    x = np.arange(100, 140, dtype=np.uint8).reshape(4, 10)
    src, shapes, offsets = pack([x])
    dst = np.zeros(4, np.int8)  # sums into a narrower type wrap, as numpy's
    _engine.reduce(POOL, 0, src, shapes, offsets, (1,), dst, np.zeros(1, np.int64))
    np.testing.assert_array_equal(dst, x.sum(axis=1, dtype=np.int8))
    f = np.array([[1.0, np.nan, -3.0], [2.0, 5.0, -1.0]], np.float32)
    src, shapes, offsets = pack([f])
    for kind, ref in ((4, np.min), (5, np.max)):
        dst = np.zeros(2, np.float32)
        _engine.reduce(POOL, kind, src, shapes, offsets, (1,), dst, np.zeros(1, np.int64))
        np.testing.assert_array_equal(dst, ref(f, axis=1))


def test_float16_reductions_on_the_cpu():
    h = [RNG.random((4, 6)).astype(np.float16)]
    out, = run_es(lambda x: fn.reductions.max(x, axes=(1,)), h)
    assert out.at(0).dtype == np.float16
    np.testing.assert_array_equal(out.at(0), h[0].max(axis=1))
    out, = run_es(lambda x: fn.reductions.mean(x), h)
    np.testing.assert_allclose(out.at(0), h[0].astype(np.float64).mean(), rtol=1e-6)


def test_axes_out_of_range_raise_index_error():
    # DALI reports an axis out of range as IndexError; ours is catchable the same way (and as RuntimeError)
    with pytest.raises(IndexError, match="out of range for 2-D input"):
        run_es(lambda x: fn.reductions.sum(x, axes=[1, 2]), [np.zeros((2, 3), np.float32)])


def test_mean_into_an_integer_type_wraps_the_sum_and_truncates():
    # DALI's: the sum in the output type (wrapping), divided by the count toward zero
    data = [np.full(12, 250, np.uint8), np.array([2, 1], np.uint8)]
    out, = run_es(lambda x: fn.reductions.mean(x, dtype=types.UINT8), data)
    for g, x in zip(samples(out), data):
        assert g.dtype == np.uint8 and int(g) == (int(x.astype(np.int64).sum()) % 256) // x.size
    data = [np.array([-3, 0], np.int32), np.array([7, 0, 0, 0], np.int32)]
    out, = run_es(lambda x: fn.reductions.mean(x, dtype=types.INT32), data)
    for g, x in zip(samples(out), data):
        assert int(g) == int(np.trunc(x.sum() / x.size))


@pytest.mark.parametrize("op,dtype", [("sum", types.INT32), ("mean", types.INT16), ("mean", types.UINT64)])
def test_unsupported_output_types_are_rejected(op, dtype):
    with pytest.raises(RuntimeError, match="is not supported for uint8 input"):
        run_es(lambda x: getattr(fn.reductions, op)(x, dtype=dtype), [np.zeros(3, np.uint8)])


def test_mean_square_and_rms_take_an_output_type():
    data = [np.array([[-2400, -2200, 1000], [7, 8, 9]], np.int16), np.array([[3, 4, 5]], np.int16)]
    ms, rms = run_es(lambda x: (fn.reductions.mean_square(x, axes=[1], dtype=types.INT64),
                                fn.reductions.rms(x, axes=[1], dtype=types.INT16)), data)
    for x, m, r in zip(data, samples(ms), samples(rms)):
        want = (x.astype(np.float64) ** 2).mean(axis=1)
        assert m.dtype == np.int64 and m.tolist() == np.trunc(want).astype(np.int64).tolist()
        assert r.dtype == np.int16 and r.tolist() == np.trunc(np.sqrt(want)).astype(np.int16).tolist()
    ms, = run_es(lambda x: fn.reductions.mean_square(x, dtype=types.UINT64), [np.array([250, 3], np.uint8)])
    assert samples(ms)[0].dtype == np.uint64 and int(samples(ms)[0]) == (250 ** 2 + 9) // 2
    for op, dtype in (("mean_square", types.UINT8), ("mean_square", types.INT64), ("rms", types.UINT64)):
        with pytest.raises(RuntimeError, match="is not supported for uint8 input"):
            run_es(lambda x: getattr(fn.reductions, op)(x, dtype=dtype), [np.zeros(3, np.uint8)])
