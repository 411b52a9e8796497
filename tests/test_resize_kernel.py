"""_engine.resize against a float64 numpy model of separable resampling (pixel-centre convention,
edge clamp, antialias = filter stretched by the scale when downscaling) and the [verified]
examples of operators.md §3."""
import math

import numpy as np
import pytest

from penstock import _engine

NN, LINEAR, CUBIC, LANCZOS3, TRIANGULAR, GAUSSIAN = range(6)
CODES = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1, np.dtype(np.int16): 5, np.dtype(np.float32): 9}
POOL = _engine.ThreadPool(2)


# ---- numpy reference --------------------------------------------------------------------------

def kernel(kind, d):
    a = np.abs(d)
    if kind in (LINEAR, TRIANGULAR):
        return np.maximum(0.0, 1 - a)
    if kind == CUBIC:
        return np.where(a < 1, 1.5 * a**3 - 2.5 * a**2 + 1,
                        np.where(a < 2, -0.5 * a**3 + 2.5 * a**2 - 4 * a + 2, 0.0))
    if kind == LANCZOS3:
        return np.where(a < 3, np.sinc(a) * np.sinc(a / 3), 0.0)
    if kind == GAUSSIAN:
        return np.where(a < 1.5, np.exp(-4 * a * a), 0.0)
    raise ValueError(kind)


RADIUS = {LINEAR: 1, TRIANGULAR: 1, CUBIC: 2, LANCZOS3: 3, GAUSSIAN: 1.5}


def axis_matrix(n_in, n_out, start, end, min_f, mag_f, antialias):
    """[n_out, n_in] resampling matrix of one axis."""
    m = np.zeros((n_out, n_in))
    step = (end - start) / n_out
    scale = abs(step)
    kind = min_f if scale > 1 else mag_f
    for j in range(n_out):
        if kind == NN:
            m[j, int(np.clip(math.floor(start + (j + 0.5) * step), 0, n_in - 1))] = 1
            continue
        stretch = scale if scale > 1 and (antialias or kind in (TRIANGULAR, GAUSSIAN)) else 1.0
        c = start + (j + 0.5) * step - 0.5
        r = RADIUS[kind] * stretch
        taps = np.arange(math.ceil(c - r), math.floor(c + r) + 1)
        w = kernel(kind, (taps - c) / stretch)
        np.add.at(m[j], np.clip(taps, 0, n_in - 1), w / w.sum())
    return m


def ref_resize(img, out_hw, kinds=(LINEAR, LINEAR), antialias=True, roi=None):
    """img [..., H, W, C] float64 -> [..., H', W', C]."""
    h, w = img.shape[-3:-1]
    roi = roi or (0, 0, h, w)
    my = axis_matrix(h, out_hw[0], roi[0], roi[2], kinds[0], kinds[1], antialias)
    mx = axis_matrix(w, out_hw[1], roi[1], roi[3], kinds[0], kinds[1], antialias)
    x = np.einsum('yh,...hwc->...ywc', my, img.astype(np.float64))
    return np.einsum('xw,...ywc->...yxc', mx, x)


def round_sat(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)


# ---- engine call ----------------------------------------------------------------------------

def run(imgs, out_sizes, dtype=None, min_filter=LINEAR, mag_filter=LINEAR, antialias=True, rois=None,
        spatial=2):
    dtype = np.dtype(dtype or imgs[0].dtype)
    src = np.concatenate([i.ravel() for i in imgs])
    shapes = np.array([i.shape for i in imgs], np.int64)
    offsets = np.cumsum([0] + [i.size for i in imgs])[:-1].astype(np.int64)
    out_shapes = np.array([i.shape[:-spatial - 1] + tuple(s) + i.shape[-1:] for i, s in zip(imgs, out_sizes)],
                          np.int64)
    vols = out_shapes.prod(axis=1)
    out_offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    dst = np.empty(int(vols.sum()), dtype)
    if rois is None:
        rois = [[0] * spatial + list(i.shape[-spatial - 1:-1]) for i in imgs]
    n = len(imgs)
    _engine.resize(POOL, src, shapes, offsets, CODES[imgs[0].dtype], dst, out_shapes, out_offsets,
                   CODES[dtype], spatial, np.array(rois, np.float64),
                   np.full((n, spatial), min_filter, np.int32), np.full((n, spatial), mag_filter, np.int32),
                   antialias)
    return [dst[o:o + v].reshape(s) for o, v, s in zip(out_offsets, vols, out_shapes)]


def run_row(values, n_out, **kw):
    row = np.array(values, np.float32).reshape(1, -1, 1)
    return run([row], [(1, n_out)], **kw)[0].ravel()


# ---- [verified] examples (operators.md §3) --------------------------------------------------

def test_verified_linear_upscale():
    expect = [0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30]
    for aa in (True, False):
        np.testing.assert_allclose(run_row([0, 10, 20, 30], 8, antialias=aa), expect, atol=1e-4)


def test_verified_linear_downscale():
    src = np.arange(8) * 10
    np.testing.assert_allclose(run_row(src, 4, antialias=False), [5, 25, 45, 65], atol=1e-4)
    np.testing.assert_allclose(run_row(src, 4), [6.25, 25, 45, 63.75], atol=1e-4)
    np.testing.assert_allclose(run_row(src, 3), [9.767, 35, 60.233], atol=1e-3)


def test_verified_nn():
    np.testing.assert_array_equal(run_row([0, 10, 20, 30], 8, min_filter=NN, mag_filter=NN),
                                  [0, 0, 10, 10, 20, 20, 30, 30])
    np.testing.assert_array_equal(run_row(np.arange(8) * 10, 4, min_filter=NN, mag_filter=NN), [10, 30, 50, 70])


def test_verified_cubic():
    np.testing.assert_allclose(run_row([0, 10, 20, 30], 8, min_filter=CUBIC, mag_filter=CUBIC),
                               [-0.703125, 1.796875, 7.265625, 12.5, 17.5, 22.734375, 28.203125, 30.703125],
                               atol=1e-4)


def test_verified_uint8_rounding():
    row = np.array([0, 255, 0, 255], np.uint8).reshape(1, 4, 1)
    out = run([row], [(1, 8)])[0].ravel()
    np.testing.assert_array_equal(out, [0, 64, 191, 191, 64, 64, 191, 255])


def test_cubic_uint8_saturates():
    row = np.array([0, 255, 0, 255], np.uint8).reshape(1, 4, 1)
    out = run([row], [(1, 8)], min_filter=CUBIC, mag_filter=CUBIC)[0].ravel()
    ref = ref_resize(row, (1, 8), (CUBIC, CUBIC))
    np.testing.assert_array_equal(out, round_sat(ref, np.uint8).ravel())


# ---- against the numpy model ---------------------------------------------------------------

@pytest.mark.parametrize("kind", [NN, LINEAR, CUBIC, LANCZOS3, TRIANGULAR, GAUSSIAN])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("channels", [1, 3, 4, 6])
def test_float_matches_reference(kind, antialias, channels):
    rng = np.random.default_rng(kind * 10 + channels)
    imgs = [rng.uniform(0, 100, (37, 53, channels)).astype(np.float32),
            rng.uniform(0, 100, (20, 15, channels)).astype(np.float32)]
    sizes = [(17, 90), (41, 7)]
    outs = run(imgs, sizes, min_filter=kind, mag_filter=kind, antialias=antialias)
    for img, size, out in zip(imgs, sizes, outs):
        np.testing.assert_allclose(out, ref_resize(img, size, (kind, kind), antialias), atol=2e-3)


@pytest.mark.parametrize("kind", [NN, LINEAR, CUBIC, LANCZOS3])
def test_uint8_matches_reference(kind):
    rng = np.random.default_rng(kind)
    img = rng.integers(0, 256, (75, 100, 3), dtype=np.uint8)
    for size in [(32, 45), (150, 130), (75, 100)]:
        out = run([img], [size], min_filter=kind, mag_filter=kind)[0]
        ref = ref_resize(img, size, (kind, kind))
        # float32 accumulation: exact except at near-ties
        assert np.abs(out.astype(int) - round_sat(ref, np.uint8).astype(int)).max() <= 1
        assert np.mean(out == round_sat(ref, np.uint8)) > 0.995


def test_separate_min_and_mag_filters():
    rng = np.random.default_rng(3)
    img = rng.uniform(0, 1, (40, 10, 2)).astype(np.float32)
    out = run([img], [(10, 30)], min_filter=CUBIC, mag_filter=NN)[0]  # y shrinks, x grows
    np.testing.assert_allclose(out, ref_resize(img, (10, 30), (CUBIC, NN)), atol=1e-4)


def test_identity_is_exact():
    img = np.random.default_rng(0).integers(0, 256, (13, 17, 3), dtype=np.uint8)
    for kind in (NN, LINEAR, CUBIC, LANCZOS3):
        np.testing.assert_array_equal(run([img], [(13, 17)], min_filter=kind, mag_filter=kind)[0], img)


def test_roi_and_flip():
    rng = np.random.default_rng(5)
    img = rng.uniform(0, 255, (30, 40, 3)).astype(np.float32)
    for roi in [(5.5, 3, 20.25, 33), (30, 0, 0, 40), (0, 40, 30, 0), (10, 35.5, 2, 12)]:
        out = run([img], [(12, 16)], rois=[roi])[0]
        np.testing.assert_allclose(out, ref_resize(img, (12, 16), roi=roi), atol=2e-3)
    flipped = run([img], [(30, 40)], rois=[(0, 40, 30, 0)], min_filter=NN, mag_filter=NN)[0]
    np.testing.assert_array_equal(flipped, img[:, ::-1])


def test_output_types():
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    ref = ref_resize(img, (11, 13))
    np.testing.assert_allclose(run([img], [(11, 13)], dtype=np.float32)[0], ref, atol=1e-3)
    fimg = rng.uniform(-500, 70000, (20, 30, 3)).astype(np.float32)
    for dt in (np.uint8, np.int16, np.uint16):
        out = run([fimg], [(11, 13)], dtype=dt)[0]
        diff = np.abs(out.astype(np.int64) - round_sat(ref_resize(fimg, (11, 13)), dt).astype(np.int64))
        assert diff.max() <= 1


def test_frames_are_resized_independently():
    rng = np.random.default_rng(7)
    seq = rng.uniform(0, 1, (3, 2, 16, 12, 3)).astype(np.float32)  # two outer dims
    out = run([seq], [(7, 25)])[0]
    assert out.shape == (3, 2, 7, 25, 3)
    np.testing.assert_allclose(out, ref_resize(seq, (7, 25)), atol=1e-4)


def test_volume():
    rng = np.random.default_rng(8)
    vol = rng.uniform(0, 1, (9, 12, 10, 2)).astype(np.float32)
    out = run([vol], [(4, 15, 6)], spatial=3)[0]
    mz = axis_matrix(9, 4, 0, 9, LINEAR, LINEAR, True)
    ref = ref_resize(np.einsum('zd,dhwc->zhwc', mz, vol), (15, 6))
    np.testing.assert_allclose(out, ref, atol=1e-4)


def test_bad_samples_raise():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(_engine.SampleError):
        _engine.resize(POOL, img.ravel(), np.array([[4, 4, 3]], np.int64), np.zeros(1, np.int64), 0,
                       np.zeros(2 * 2 * 4, np.uint8), np.array([[2, 2, 4]], np.int64), np.zeros(1, np.int64), 0,
                       2, np.array([[0, 0, 4, 4]], np.float64), np.ones((1, 2), np.int32),
                       np.ones((1, 2), np.int32), True)
    with pytest.raises(_engine.SampleError):
        run([img], [(2, 2)], rois=[(0, 0, np.nan, 4)])
    with pytest.raises(ValueError):
        run([img], [(2, 2)], min_filter=9)


def test_uint8_output_rounds_values_just_below_half_down():
    """0.49999997 must round to 0 and 0.5 to 1 (half away from zero), in the SIMD and scalar tails."""
    from penstock import _engine
    from penstock.types import DALIDataType as T
    pool = _engine.ThreadPool(1)
    values = np.array([0.49999997, 0.5, 1.4999999, 1.5, 254.49998, 254.5] * 4, np.float32)  # 24 = 16 + 8
    src = values.reshape(1, -1, 1)
    dst = np.empty(values.size, np.uint8)
    shapes = np.array([[1, values.size, 1]], np.int64)
    offsets = np.array([0], np.int64)
    # an identity resize (same size, NN) only converts
    _engine.resize(pool, src.reshape(-1), shapes, offsets, int(T.FLOAT), dst, shapes, offsets, int(T.UINT8), 2,
                   np.array([[0, 0, 1, values.size]], np.float64), np.zeros((1, 2), np.int32),
                   np.zeros((1, 2), np.int32), False)
    expected = np.sign(values) * np.floor(np.abs(values.astype(np.float64)) + 0.5)
    np.testing.assert_array_equal(dst, expected.astype(np.uint8))


def test_nearest_neighbour_exact_ties_take_the_exact_index():
    """floor((i + 0.5) * in / out) in exact arithmetic: 7.5 * 120 / 50 = 18, not 17."""
    from fractions import Fraction
    from penstock import _engine
    from penstock.types import DALIDataType as T
    pool = _engine.ThreadPool(1)
    src = np.arange(120, dtype=np.float32).reshape(1, 120, 1)
    dst = np.empty(50, np.float32)
    _engine.resize(pool, src.reshape(-1), np.array([[1, 120, 1]], np.int64), np.array([0], np.int64), int(T.FLOAT),
                   dst, np.array([[1, 50, 1]], np.int64), np.array([0], np.int64), int(T.FLOAT), 2,
                   np.array([[0, 0, 1, 120]], np.float64), np.zeros((1, 2), np.int32), np.zeros((1, 2), np.int32),
                   False)
    expected = [int((Fraction(2 * i + 1, 2) * Fraction(120, 50))) for i in range(50)]  # floor of a fraction
    np.testing.assert_array_equal(dst, expected)
