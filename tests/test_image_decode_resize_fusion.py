"""A decoder whose only consumer is a downscaling resize decodes JPEGs smaller in the DCT domain;
the result must match decode-then-resize (same shapes, nearly the same pixels) for every
orientation and crop window."""
import io
import os
import sys

import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def, types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import photo_like  # noqa: E402


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fusion")
    rng = np.random.default_rng(5)
    paths = []
    for k, orientation in enumerate([1, 6, 3, 8, 2, 1]):
        img = photo_like(rng, 400 + 24 * k, 520 - 16 * k, noise_sigma=2.0)
        exif = Image.Exif()
        exif[0x0112] = orientation
        path = root / f"{k}.jpg"
        Image.fromarray(img).save(path, quality=95, exif=exif.tobytes())
        paths.append(str(path))
    return paths


def _run(files, decode, resize_args, fused: bool):
    @pipeline_def(batch_size=len(files), num_threads=2, device_id=None, seed=3)
    def pipe():
        data, _ = fn.readers.file(files=files)
        images = decode(data)
        out = fn.resize(images, **resize_args)
        return (out,) if fused else (out, images)  # a second consumer disables the fusion

    p = pipe()
    p.build()
    decoder = next(op for op in p._ops if op.schema.fn_name.startswith("decoders."))
    assert (decoder._resize is not None) == fused
    return p.run()[0]


@pytest.mark.parametrize("decode,resize_args", [
    (lambda d: fn.decoders.image(d, output_type=types.RGB), dict(resize_x=112, resize_y=96)),
    (lambda d: fn.decoders.image(d), dict(resize_shorter=64)),
    (lambda d: fn.decoders.image_crop(d, crop=(300, 260), crop_pos_x=0.3, crop_pos_y=0.8),
     dict(resize_x=70, resize_y=60)),
    (lambda d: fn.decoders.image_random_crop(d, random_area=[0.5, 1.0]), dict(resize_x=56, resize_y=56)),
])
def test_fused_decode_matches_decode_then_resize(jpegs, decode, resize_args):
    fused = _run(jpegs, decode, resize_args, fused=True)
    plain = _run(jpegs, decode, resize_args, fused=False)
    assert fused.shape() == plain.shape()
    for i in range(len(jpegs)):
        a, b = fused.at(i).astype(np.float64), plain.at(i).astype(np.float64)
        # a decoder's output may not depend on its consumer beyond the resampling tolerance
        assert np.abs(a - b).max() <= 1, f"sample {i}: max abs diff {np.abs(a - b).max():.0f}"


@pytest.mark.parametrize("shorter", [256, 128, 64])
def test_fusion_stays_within_one_level_where_dct_scaling_would_dominate(tmp_path, shorter):
    """512x512 -> 256 once decoded at 1/2 in the DCT domain and changed pixels by up to 55 levels;
    the DCT scale is now only taken where the resize still shrinks enough for its filter to rule."""
    rng = np.random.default_rng(3)
    files = []
    for k, (h, w) in enumerate([(512, 512), (384, 512), (600, 800), (1024, 768)]):
        path = tmp_path / f"{k}.jpg"
        Image.fromarray(photo_like(rng, h, w, noise_sigma=3.0)).save(path, quality=90)
        files.append(str(path))
    args = dict(resize_shorter=shorter, interp_type=types.INTERP_TRIANGULAR, antialias=True)
    fused = _run(files, fn.decoders.image, args, fused=True)
    plain = _run(files, fn.decoders.image, args, fused=False)
    for i in range(len(files)):
        diff = np.abs(fused.at(i).astype(np.int64) - plain.at(i).astype(np.int64))
        assert diff.max() <= 1, f"sample {i}: max abs diff {diff.max()}"


def test_fusion_is_skipped_for_upscaling_and_non_antialiased_resize(jpegs):
    up = _run(jpegs[:2], lambda d: fn.decoders.image(d), dict(resize_x=1000, resize_y=900), fused=True)
    assert up.shape()[0] == (900, 1000, 3)

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def nearest():
        data, _ = fn.readers.file(files=jpegs[:2])
        return fn.resize(fn.decoders.image(data), resize_x=50, resize_y=40, interp_type=types.INTERP_NN)

    p = nearest()
    p.build()
    assert next(op for op in p._ops if op.schema.fn_name == "decoders.image")._resize is None


def test_geometry_reports_where_decoded_pixels_lie(jpegs):
    """The kernel's geometry for a DCT-scaled crop: origin within one scaled pixel before the window."""
    from penstock import _engine
    data = np.fromfile(jpegs[1], np.uint8)  # EXIF orientation 6 (rotated 90 degrees)
    pool = _engine.ThreadPool(1)
    shapes, offsets = np.array([[data.size]], np.int64), np.array([0], np.int64)
    crop = np.array([[37, 51, 200, 150]], np.int64)
    out, out_shapes, _, _, geometry = _engine.decode_images(pool, data, shapes, offsets, 0, True, crop,
                                                            np.array([[50, 38]], np.int64), False, True)
    y0, x0, step = geometry[0]
    assert step in (2.0, 4.0)
    assert 37 - step < y0 <= 37 and 51 - step < x0 <= 51
    h, w = out_shapes[0, :2]
    assert y0 + h * step >= 37 + 200 and x0 + w * step >= 51 + 150
