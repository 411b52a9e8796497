"""Point operations on uint8 images (operators/point_ops.py) against PIL, with per-sample parameters."""
import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

from penstock import fn, pipeline_def
from penstock._graph import make_op
from penstock.operators import point_ops


def _images(n=6, seed=0, channels=3):
    rng = np.random.default_rng(seed)
    shape = (lambda i: (9 + i, 11, channels)) if channels else (lambda i: (9 + i, 11))
    # low contrast, so that auto-contrast and equalize have work to do
    return [rng.integers(40, 180, shape(i)).astype(np.uint8) for i in range(n)]


def _run(op, imgs, params=None):
    @pipeline_def(batch_size=len(imgs), num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC" if imgs[0].ndim == 3 else "HW")
        if op is point_ops.EQUALIZE:
            return fn.equalize(x)
        kwargs = {}
        if params is not None:
            kwargs["param"] = fn.external_source(source=lambda: [np.float32(p) for p in params], batch=True)
        return make_op(op, (x,), kwargs)[0]
    out = pipe().run()[0]
    return [out.at(i) for i in range(len(imgs))]


@pytest.mark.parametrize("channels", [3, 0])
@pytest.mark.parametrize("op,reference,tolerance", [
    (point_ops.AUTO_CONTRAST, ImageOps.autocontrast, 1),  # PIL truncates, we round
    (point_ops.INVERT, ImageOps.invert, 0),
])
def test_parameterless_operations_match_pil(op, reference, tolerance, channels):
    imgs = _images(channels=channels)
    imgs[0][:] = 77  # a flat image stays as it is (equalize, auto-contrast)
    for img, out in zip(imgs, _run(op, imgs)):
        ref = np.asarray(reference(Image.fromarray(img)))
        assert out.shape == img.shape
        assert np.abs(out.astype(int) - ref).max() <= tolerance


def _equalize_reference(channel: np.ndarray) -> np.ndarray:
    """OpenCV's equalizeHist, which DALI's equalize computes: per used value, the share of the
    pixels above the lowest used value, scaled to 255 and rounded half to even."""
    values = channel.ravel().astype(np.int64)
    lowest = values.min()
    rest = int((values != lowest).sum())
    if rest == 0:
        return channel.copy()
    lut = {v: np.rint(255.0 * int(((values <= v) & (values != lowest)).sum()) / rest) for v in np.unique(values)}
    return np.vectorize(lambda v: lut[v])(channel).astype(np.uint8)


@pytest.mark.parametrize("channels", [3, 0])
def test_equalize_matches_opencv_equalize_hist(channels):
    imgs = _images(channels=channels)
    imgs[0][:] = 77  # a flat image stays as it is
    for img, out in zip(imgs, _run(point_ops.EQUALIZE, imgs)):
        ref = np.stack([_equalize_reference(img[..., c]) for c in range(img.shape[2])], -1) if channels \
            else _equalize_reference(img)
        np.testing.assert_array_equal(out, ref)


def test_equalize_rounds_half_to_even():
    # 1 * 255 / 102 = 2.5 exactly: DALI 2.4 gives 2
    img = np.array([0, 1] + [2] * 101, np.uint8).reshape(1, 103, 1)
    out, = _run(point_ops.EQUALIZE, [img])
    assert out.ravel()[:3].tolist() == [0, 2, 255]


def test_posterize_solarize_per_sample():
    imgs = _images()
    bits = [8, 6, 4, 2, 1, 0]
    for img, b, out in zip(imgs, bits, _run(point_ops.POSTERIZE, imgs, bits)):
        np.testing.assert_array_equal(out, img & ((0xFF << (8 - b)) & 0xFF))
    thresholds = [0, 60, 100, 128.5, 200, 256]
    for img, t, out in zip(imgs, thresholds, _run(point_ops.SOLARIZE, imgs, thresholds)):
        np.testing.assert_array_equal(out, np.asarray(ImageOps.solarize(Image.fromarray(img), t)))
    shifts = [0, 10, 50, 100, 110, 200]
    for img, s, out in zip(imgs, shifts, _run(point_ops.SOLARIZE_ADD, imgs, shifts)):
        np.testing.assert_array_equal(out, np.where(img < 128, np.minimum(img.astype(int) + s, 255), img))


@pytest.mark.parametrize("op,enhance", [(point_ops.CONTRAST, ImageEnhance.Contrast),
                                        (point_ops.SHARPNESS, ImageEnhance.Sharpness)])
def test_enhancements_match_pil(op, enhance):
    imgs = _images()
    factors = [0.0, 0.1, 0.5, 1.0, 1.5, 1.9]
    for img, f, out in zip(imgs, factors, _run(op, imgs, factors)):
        ref = np.asarray(enhance(Image.fromarray(img)).enhance(f)).astype(int)
        assert np.abs(out.astype(int) - ref).max() <= 1  # PIL truncates the blend, we round


def test_rejects_non_uint8():
    imgs = [np.zeros((4, 4, 3), np.float32)] * 2
    with pytest.raises(RuntimeError, match="equalize.*uint8"):
        _run(point_ops.EQUALIZE, imgs)


def test_equalize_takes_frames_and_planar_channels_one_by_one():
    rng = np.random.default_rng(9)
    frames = [rng.integers(40, 120 + 40 * k, (2, 9, 7, 3)).astype(np.uint8) for k in range(2)]

    def equalized(images, layout):
        @pipeline_def(batch_size=len(images), num_threads=2, device_id=None)
        def pipe():
            return fn.equalize(fn.external_source(source=lambda: images, batch=True, layout=layout))
        out = pipe().run()[0]
        return [out.at(i) for i in range(len(images))]

    per_frame = equalized(frames, "FHWC")
    for seq, out in zip(frames, per_frame):
        for f in range(len(seq)):
            np.testing.assert_array_equal(out[f], equalized([seq[f]], "HWC")[0])
    planar = [np.ascontiguousarray(seq.transpose(0, 3, 1, 2)) for seq in frames]
    for seq, out in zip(per_frame, equalized(planar, "FCHW")):
        np.testing.assert_array_equal(out, seq.transpose(0, 3, 1, 2))


def test_parameter_tables_take_each_sample_s_parameter_for_all_its_planes():
    rng = np.random.default_rng(4)
    frames = [rng.integers(0, 256, (2, 5, 6, 3)).astype(np.uint8) for _ in range(3)]
    thresholds = [30.0, 128.5, 250.0]

    def solarized(images, layout):
        @pipeline_def(batch_size=len(images), num_threads=2, device_id=None)
        def pipe():
            x = fn.external_source(source=lambda: images, batch=True, layout=layout)
            param = fn.external_source(source=lambda: [np.float32(t) for t in thresholds], batch=True)
            return make_op(point_ops.SOLARIZE, (x,), {"param": param})[0]
        out = pipe().run()[0]
        return [out.at(i) for i in range(len(images))]

    want = [np.where(seq < t, seq, 255 - seq) for seq, t in zip(frames, thresholds)]
    for got, ref in zip(solarized(frames, "FHWC"), want):
        np.testing.assert_array_equal(got, ref)
    planar = [np.ascontiguousarray(seq.transpose(0, 3, 1, 2)) for seq in frames]
    for got, ref in zip(solarized(planar, "FCHW"), want):
        np.testing.assert_array_equal(got, ref.transpose(0, 3, 1, 2))


def test_each_frame_takes_its_own_sample_s_parameter_when_a_sequence_is_empty():
    # two samples, two planes, but both of the second sample: the planes are not the samples
    frames = [np.zeros((0, 4, 5, 3), np.uint8), np.full((2, 4, 5, 3), 200, np.uint8)]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: frames, batch=True, layout="FHWC")
        param = fn.external_source(source=lambda: [np.float32(100.0), np.float32(250.0)], batch=True)
        return make_op(point_ops.SOLARIZE, (x,), {"param": param})[0]
    out = pipe().run()[0]
    assert out.at(0).shape == (0, 4, 5, 3)
    np.testing.assert_array_equal(out.at(1), frames[1])  # 200 < 250: kept (with 100 they would invert)


def test_posterize_rounds_its_bits_half_to_even_and_clips_them():
    imgs = _images()
    bits = [2.5, 3.5, -1.0, 9.0, 0.4, 7.6]
    kept = [2, 4, 0, 8, 0, 8]
    for img, b, out in zip(imgs, kept, _run(point_ops.POSTERIZE, imgs, bits)):
        np.testing.assert_array_equal(out, img & ((0xFF << (8 - b)) & 0xFF))


def test_experimental_equalize_is_a_deprecated_alias():
    imgs = _images(2)
    with pytest.warns(DeprecationWarning, match="fn.experimental.equalize` is now deprecated. Use `penstock.fn.equalize"):
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            return fn.experimental.equalize(fn.external_source(source=lambda: imgs, batch=True, layout="HWC"))
        out = pipe().run()[0]
    np.testing.assert_array_equal(out.at(0), _run(point_ops.EQUALIZE, imgs)[0])
