"""filter, laplacian, median_blur, erode and dilate on the CPU against scipy.ndimage references."""
import numpy as np
import pytest
from scipy import ndimage

from penstock import fn, types

from _util import run_es, samples

rng = np.random.default_rng(3)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((12, 15), (7, 9))]
SCIPY_MODES = {"reflect_101": "mirror", "reflect_1001": "reflect", "wrap": "wrap", "clamp": "nearest",
               "constant": "constant"}


def _correlate(img, f, border, anchor=None, cval=0.0):
    """Per channel; scipy centres a filter of extent e at e // 2 (origin shifts it)."""
    f = f.astype(np.float64)
    anchor = [e // 2 for e in f.shape] if anchor is None else anchor
    origin = [a - e // 2 for a, e in zip(anchor, f.shape)]
    planes = [ndimage.correlate(img[..., c].astype(np.float64), f, mode=SCIPY_MODES[border], cval=cval,
                                origin=origin) for c in range(img.shape[-1])]
    return np.stack(planes, -1)


def _to_uint8(x):
    return np.clip(np.floor(x + 0.5), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("border", list(SCIPY_MODES))
def test_filter_border_modes(border):
    kernels = [rng.uniform(-1, 1, (3, 5)).astype(np.float32), rng.uniform(-1, 1, (4, 2)).astype(np.float32)]
    out, = run_es(lambda x, f: fn.filter(x, f, border=border, dtype=types.FLOAT), IMAGES, kernels,
                  layouts=["HWC", None])
    for img, f, o in zip(IMAGES, kernels, samples(out)):
        np.testing.assert_allclose(o, _correlate(img, f, border), rtol=1e-5, atol=1e-3)


def test_filter_anchor_fill_value_and_valid_mode():
    kernels = [np.ones((2, 3), np.float32) / 6] * 2
    fills = [np.array(200, np.uint8), np.array(7, np.uint8)]
    out, = run_es(lambda x, f, c: fn.filter(x, f, c, border="constant", anchor=[0, 2]), IMAGES, kernels, fills,
                  layouts=["HWC", None, None])
    for img, f, c, o in zip(IMAGES, kernels, fills, samples(out)):
        assert o.dtype == np.uint8
        ref = _to_uint8(_correlate(img, f, "constant", anchor=[0, 2], cval=float(c)))
        assert np.abs(o.astype(int) - ref).max() <= 1
    out, = run_es(lambda x, f: fn.filter(x, f, mode="valid"), IMAGES, kernels, layouts=["HWC", None])
    for img, o in zip(IMAGES, samples(out)):
        assert o.shape == (img.shape[0] - 1, img.shape[1] - 2, 3)
        ref = _to_uint8(_correlate(img, kernels[0], "reflect_101", anchor=[0, 0])[:-1, :-2])
        assert np.abs(o.astype(int) - ref).max() <= 1


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
def test_filter_rounds_ties_half_to_even_as_dali(dtype):
    """Averages of two neighbours: every odd sum is an exact .5 tie, which goes to the even integer
    (DALI's CPU filter; tests/differential/_operator_rules.py runs it against DALI)."""
    row = np.array([-3, -2, 0, 1, 2, 3, 4, 5, 6, 7, 100, 101], np.int64)
    row = row - row.min() if np.iinfo(dtype).min == 0 else row
    img = [np.repeat(row.astype(dtype)[None, :, None], 2, axis=0)] * 2
    pair = [np.array([[0.5, 0.5]], np.float32)] * 2
    out, = run_es(lambda x, f: fn.filter(x, f, anchor=[0, 0], border="clamp"), img, pair, layouts=["HWC", None])
    halves = (row[:-1] + row[1:]) / 2
    want = np.append(np.rint(halves), row[-1])  # the last averages the clamped edge with itself
    np.testing.assert_array_equal(samples(out)[0][0, :, 0], want.astype(dtype))
    assert (halves % 1 == 0.5).sum() >= 5


def test_filter_errors():
    with pytest.raises(ValueError, match="anchor"):
        run_es(lambda x, f: fn.filter(x, f, anchor=[3, 0]), IMAGES, [np.ones((3, 3), np.float32)] * 2,
               layouts=["HWC", None])
    with pytest.raises(ValueError, match="2 dimensions"):
        run_es(lambda x, f: fn.filter(x, f), IMAGES, [np.ones(3, np.float32)] * 2, layouts=["HWC", None])
    with pytest.raises(ValueError, match="border"):
        run_es(lambda x, f: fn.filter(x, f, border="mirror"), IMAGES, [np.ones((1, 1), np.float32)] * 2,
               layouts=["HWC", None])


def _laplacian_ref(img, d, s):
    """Sum of separable second derivatives: derivative window d along its axis, smoothing s elsewhere."""
    from penstock.operators.filter import derivative_window, smoothing_window
    x = img.astype(np.float64)
    total = 0
    for axis in range(2):
        part = x
        for ax in range(2):
            w = derivative_window(d[axis]) if ax == axis else smoothing_window(s[axis][ax])
            part = ndimage.correlate1d(part, w, axis=ax, mode="mirror")
        total = total + part
    return total


def test_laplacian_windows_and_scaling():
    imgs = [im[..., 0].astype(np.float32) for im in IMAGES]
    out, = run_es(lambda x: fn.laplacian(x, window_size=[3, 5]), imgs, layouts=["HW"])
    for img, o in zip(imgs, samples(out)):
        np.testing.assert_allclose(o, _laplacian_ref(img, [3, 5], [[3, 3], [5, 5]]), rtol=1e-5, atol=1e-2)
    out, = run_es(lambda x: fn.laplacian(x, window_size=5, smoothing_size=[1, 3]), imgs, layouts=["HW"])
    for img, o in zip(imgs, samples(out)):
        np.testing.assert_allclose(o, _laplacian_ref(img, [5, 5], [[1, 3], [1, 3]]), rtol=1e-5, atol=1e-2)
    out, = run_es(lambda x: fn.laplacian(x, normalized_kernel=True), imgs, layouts=["HW"])
    for img, o in zip(imgs, samples(out)):  # 2^(-6 + 2 + 2)
        np.testing.assert_allclose(o, _laplacian_ref(img, [3, 3], [[3, 3], [3, 3]]) / 4, rtol=1e-5, atol=1e-2)


def test_laplacian_of_uint8_saturates_and_rejects_bad_windows():
    out, = run_es(lambda x: fn.laplacian(x), IMAGES, layouts=["HWC"])
    for img, o in zip(IMAGES, samples(out)):
        ref = np.stack([_laplacian_ref(img[..., c], [3, 3], [[3, 3], [3, 3]]) for c in range(3)], -1)
        assert o.dtype == np.uint8 and np.abs(o.astype(int) - _to_uint8(ref)).max() <= 1
    with pytest.raises(ValueError, match="Window size must be an odd integer between 3 and 31, got 4"):
        run_es(lambda x: fn.laplacian(x, window_size=4), IMAGES, layouts=["HWC"])
    with pytest.raises(ValueError, match="normalized_kernel"):
        run_es(lambda x: fn.laplacian(x, scale=2.0, normalized_kernel=True), IMAGES, layouts=["HWC"])


def test_median_blur_replicates_edges():
    out, = run_es(lambda x: fn.experimental.median_blur(x, window_size=[3, 5]), IMAGES, layouts=["HWC"])
    for img, o in zip(IMAGES, samples(out)):
        np.testing.assert_array_equal(o, ndimage.median_filter(img, size=(3, 5, 1), mode="nearest"))


def test_erode_and_dilate():
    out_e, out_d = run_es(lambda x: (fn.experimental.erode(x), fn.experimental.dilate(x, mask_size=[5, 3],
                                                                                        iterations=2)),
                          IMAGES, layouts=["HWC"])
    for img, e, d in zip(IMAGES, samples(out_e), samples(out_d)):
        # constant border: points outside never win (scipy: pad with the type's extreme)
        np.testing.assert_array_equal(e, ndimage.grey_erosion(img, size=(3, 3, 1), mode="constant", cval=255))
        once = ndimage.grey_dilation(img, size=(3, 5, 1), mode="constant", cval=0)  # mask_size is (W, H)
        np.testing.assert_array_equal(d, ndimage.grey_dilation(once, size=(3, 5, 1), mode="constant", cval=0))
    out, = run_es(lambda x: fn.experimental.erode(x, border_mode="replicate"), IMAGES, layouts=["HWC"])
    for img, o in zip(IMAGES, samples(out)):
        np.testing.assert_array_equal(o, ndimage.grey_erosion(img, size=(3, 3, 1), mode="nearest"))


_CV2_BORDERS = {"constant": "BORDER_CONSTANT", "replicate": "BORDER_REPLICATE", "reflect": "BORDER_REFLECT",
                "reflect_101": "BORDER_REFLECT_101", "wrap": "BORDER_WRAP"}


@pytest.mark.parametrize("border", list(_CV2_BORDERS))
@pytest.mark.parametrize("op", ["erode", "dilate"])
def test_erode_and_dilate_take_mask_size_and_anchor_as_x_y_as_dali(op, border):
    """DALI 2.4's erode/dilate (GPU only there) hand mask_size and anchor to CV-CUDA as (x, y), and
    its own tests check them against OpenCV's morphology with the same ksize and anchor: so here.
    (The wrap border is OpenCV's BORDER_WRAP; OpenCV's morphology refuses it, so numpy pads.)"""
    cv2 = pytest.importorskip("cv2")
    masks = [np.array([5, 2], np.int32), np.array([1, 4], np.int32)]
    anchors = [np.array([3, 1], np.int32), np.array([-1, 0], np.int32)]
    out, = run_es(lambda x, m, a: getattr(fn.experimental, op)(x, mask_size=m, anchor=a, border_mode=border),
                  IMAGES, masks, anchors, layouts=["HWC", None, None])
    for img, (w, h), (ax, ay), o in zip(IMAGES, masks, anchors, samples(out)):
        ax, ay = (w // 2 if ax < 0 else ax), (h // 2 if ay < 0 else ay)
        element = cv2.getStructuringElement(cv2.MORPH_RECT, (int(w), int(h)))
        if border == "wrap":
            padded = np.pad(img, ((ay, h - 1 - ay), (ax, w - 1 - ax), (0, 0)), mode="wrap")
            want = getattr(cv2, op)(padded, element, anchor=(int(ax), int(ay)), borderType=cv2.BORDER_REPLICATE)
            want = want[ay:ay + img.shape[0], ax:ax + img.shape[1]]
        else:
            want = getattr(cv2, op)(img, element, anchor=(int(ax), int(ay)), borderType=getattr(cv2, _CV2_BORDERS[border]))
        np.testing.assert_array_equal(o, want)
