"""Colour operators in pipelines, against numpy references of the spec's formulas."""
import numpy as np
import pytest
from kernel_batch import round_sat
from pipeline_run import run_once

from penstock import fn, types

RAMP = np.repeat(np.array([0, 64, 128, 255], np.uint8)[None, :, None], 3, axis=2)
RED = np.array([[[255, 0, 0]]], np.uint8)


def rgb_images(seed, dtype=np.uint8, n=3):
    rng = np.random.default_rng(seed)
    shapes = [(7, 9, 3), (1, 5, 3), (12, 4, 3)][:n]
    if dtype == np.float32:
        return [rng.uniform(0, 1, s).astype(np.float32) for s in shapes]
    return [rng.integers(0, 256, s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("op, kwargs, expected", [
    (fn.brightness_contrast, dict(brightness=1.5), [0, 96, 192, 255]),
    (fn.brightness_contrast, dict(contrast=2.0), [0, 0, 128, 255]),
    (fn.brightness_contrast, dict(brightness_shift=0.1), [26, 90, 154, 255]),
    (fn.brightness, dict(brightness=1.5), [0, 96, 192, 255]),
    (fn.contrast, dict(contrast=2.0), [0, 0, 128, 255]),
])
def test_brightness_contrast_verified(op, kwargs, expected):
    out = run_once(lambda x: op(x, **kwargs), [RAMP])[0][0]
    assert (out == np.array(expected)[None, :, None]).all()


def test_brightness_contrast_per_sample_args_and_float_output():
    imgs = rgb_images(0)
    b = [np.float32(v) for v in (0.5, 1.2, 2.0)]
    c = [np.float32(v) for v in (1.0, 0.3, 1.7)]
    outs = run_once(lambda x, bb, cc: fn.brightness_contrast(x, brightness=bb, contrast=cc, contrast_center=100.0,
                                                             brightness_shift=0.05, dtype=types.FLOAT),
                    imgs, b, c)[0]
    for img, bb, cc, out in zip(imgs, b, c, outs):
        ref = 0.05 * 1.0 + bb * (100 + cc * (img.astype(np.float64) - 100))
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)


def test_brightness_contrast_float_input_centre_half():
    imgs = rgb_images(1, np.float32)
    outs = run_once(lambda x: fn.contrast(x, contrast=3.0), imgs)[0]
    for img, out in zip(imgs, outs):
        np.testing.assert_allclose(out, 0.5 + 3 * (img - 0.5), rtol=1e-5, atol=1e-6)


# Reference for hsv/hue/saturation/color_twist, written from the formulas: YIQ with the
# classic NTSC coefficients and back by its exact inverse, hue rotates the I/Q plane,
# saturation scales it.
YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
YIQ_INV = np.linalg.inv(YIQ)


def hsv_reference(img, hue=0.0, sat=1.0, val=1.0, brightness=1.0, contrast=1.0, half=128.0):
    yiq = img.astype(np.float64) @ YIQ.T
    h = np.deg2rad(hue)
    i, q = yiq[..., 1], yiq[..., 2]
    yiq = np.stack([yiq[..., 0], sat * (np.cos(h) * i + np.sin(h) * q),
                    sat * (-np.sin(h) * i + np.cos(h) * q)], -1) * val
    rgb = yiq @ YIQ_INV.T
    return brightness * contrast * rgb + brightness * (1 - contrast) * half


def test_hsv_saturation_zero_on_red_is_76():
    out = run_once(lambda x: fn.hsv(x, saturation=0.0), [RED])[0][0]
    assert out.tolist() == [[[76, 76, 76]]]


@pytest.mark.parametrize("op, kwargs, ref_kwargs", [
    (fn.hsv, dict(hue=40.0, saturation=0.7, value=1.1), dict(hue=40.0, sat=0.7, val=1.1)),
    (fn.hue, dict(hue=-120.0), dict(hue=-120.0)),
    (fn.saturation, dict(saturation=1.8), dict(sat=1.8)),
    (fn.color_twist, dict(hue=25.0, saturation=0.5, brightness=1.2, contrast=0.8),
     dict(hue=25.0, sat=0.5, brightness=1.2, contrast=0.8)),
])
def test_hsv_family_matches_yiq_reference(op, kwargs, ref_kwargs):
    imgs = rgb_images(2)
    outs = run_once(lambda x: op(x, **kwargs), imgs)[0]
    for img, out in zip(imgs, outs):
        ref = round_sat(hsv_reference(img, **ref_kwargs), np.uint8)
        assert out.dtype == np.uint8
        assert np.abs(out.astype(int) - ref).max() <= 1


def test_hsv_default_dtype_is_uint8_and_hue_keeps_float():
    imgs = rgb_images(3, np.float32)
    hsv_out, hue_out = run_once(lambda x: (fn.hsv(x, value=200.0), fn.hue(x, hue=30.0)), imgs)
    assert hsv_out[0].dtype == np.uint8 and hue_out[0].dtype == np.float32
    np.testing.assert_allclose(hue_out[0], hsv_reference(imgs[0], hue=30.0, half=0.5), atol=1e-4)


@pytest.mark.parametrize("op", [fn.hsv, fn.hue, fn.saturation, fn.color_twist])
def test_hsv_family_neutral_arguments_are_the_identity_in_float(op):
    # YIQ -> RGB undoes RGB -> YIQ exactly, so unrounded (float) outputs keep the input values
    imgs = rgb_images(5)
    outs = run_once(lambda x: op(x, dtype=types.FLOAT), imgs)[0]
    for img, out in zip(imgs, outs):
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, img, atol=1e-3)


@pytest.mark.parametrize("op, kwargs", [(fn.hue, dict(hue=50.0)), (fn.saturation, dict(saturation=0.3)),
                                        (fn.color_twist, dict(hue=-20.0, saturation=1.4, contrast=0.7))])
@pytest.mark.parametrize("image_type", [types.BGR, types.GRAY, types.YCbCr])
def test_hsv_family_image_type_does_not_change_the_transform(op, kwargs, image_type):
    imgs = rgb_images(6)
    rgb, other = run_once(lambda x: (op(x, **kwargs), op(x, image_type=image_type, **kwargs)), imgs)
    for a, b in zip(rgb, other):
        np.testing.assert_array_equal(a, b)


def ycbcr_reference(rgb):
    r, g, b = [rgb[..., i].astype(np.float64) for i in range(3)]
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    cb = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    cr = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    return np.stack([y, cb, cr], -1)


def test_color_space_conversion_verified_red():
    out = run_once(lambda x: fn.color_space_conversion(x, image_type=types.RGB, output_type=types.YCbCr),
                   [RED])[0][0]
    assert out.tolist() == [[[81, 90, 240]]]


YCBCR_M = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]]) / 255
TO_FLOAT_RGB = {"RGB": lambda a: a.astype(np.float64), "BGR": lambda a: a[..., ::-1].astype(np.float64),
                "GRAY": lambda a: np.repeat(a.astype(np.float64), 3, axis=2),
                "YCbCr": lambda a: (a.astype(np.float64) - [16, 128, 128]) @ np.linalg.inv(YCBCR_M).T}
FROM_FLOAT_RGB = {"RGB": lambda f: f, "BGR": lambda f: f[..., ::-1],
                  "GRAY": lambda f: (f @ [0.299, 0.587, 0.114])[..., None], "YCbCr": ycbcr_reference}


@pytest.mark.parametrize("src, dst", [("RGB", "BGR"), ("RGB", "GRAY"), ("RGB", "YCbCr"), ("BGR", "YCbCr"),
                                      ("YCbCr", "RGB"), ("GRAY", "RGB"), ("BGR", "GRAY"), ("YCbCr", "GRAY"),
                                      ("GRAY", "YCbCr")])
def test_color_space_conversion_pairs(src, dst):
    inputs = [round_sat(FROM_FLOAT_RGB[src](a.astype(np.float64)), np.uint8) for a in rgb_images(4)]
    expected = [round_sat(FROM_FLOAT_RGB[dst](TO_FLOAT_RGB[src](a)), np.uint8) for a in inputs]
    outs = run_once(lambda x: fn.color_space_conversion(x, image_type=getattr(types, src),
                                                        output_type=getattr(types, dst)), inputs)[0]
    for out, ref in zip(outs, expected):
        assert out.shape == ref.shape
        assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1


@pytest.mark.parametrize("space", ["RGB", "BGR", "GRAY", "YCbCr"])
def test_color_space_conversion_to_the_same_space_is_an_error(space):
    img = RED[..., :1] if space == "GRAY" else RED
    t = getattr(types, space)
    with pytest.raises(RuntimeError, match=f"color_space_conversion.*image_type and output_type are both {space}"):
        run_once(lambda x: fn.color_space_conversion(x, image_type=t, output_type=t), [img])


def test_the_engines_matrices_take_a_column_per_sample_or_one_for_all():
    from penstock import _engine
    from penstock.operators.color import RGB_TO_YIQ, YIQ_TO_RGB
    m = _engine.scaled_identity_matrices(2, np.array([2.0, 3.0]), np.array([5.0]), 3)
    assert m.dtype == np.float32 and m.shape == (2, 3, 4)
    np.testing.assert_array_equal(m[1], [[3, 0, 0, 5], [0, 3, 0, 5], [0, 0, 3, 5]])
    one, none = np.ones(1), np.zeros(1)
    identity = _engine.hsv_matrices(3, none, one, one, one, none, YIQ_TO_RGB, RGB_TO_YIQ)
    assert identity.shape == (3, 3, 4)
    np.testing.assert_allclose(identity[2], np.eye(3, 4), atol=1e-6)  # hue 0, saturation and value 1
    with pytest.raises(ValueError, match=r"scaled_identity_matrices: each column must be \[N\] \(2\) or \[1\]"):
        _engine.scaled_identity_matrices(2, np.ones(3), none, 3)
