"""_engine.jpeg_compression_distortion against an OpenCV JPEG encode/decode round trip."""
import cv2
import numpy as np
import pytest
from kernel_batch import POOL, pack, unpack

from penstock import _engine


def run(samples, qualities):
    seqs = [s if s.ndim == 4 else s[None] for s in samples]
    src, shapes, offs = pack(seqs)
    dst = np.zeros_like(src)
    _engine.jpeg_compression_distortion(POOL, src, shapes, offs, dst, offs, np.array(qualities, np.int64))
    return [o if s.ndim == 4 else o[0] for s, o in zip(samples, unpack(dst, shapes, offs))]


def smooth_image(h, w, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([128 + 100 * np.sin(x / 7.0), 128 + 100 * np.cos(y / 5.0), (x + y) % 256], -1)
    return np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)


def cv2_roundtrip(rgb, quality):
    ok, buf = cv2.imencode(".jpg", rgb[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1]


@pytest.mark.parametrize("quality", [5, 50, 95])
def test_matches_opencv_roundtrip(quality):
    img = smooth_image(37, 53, quality)
    out = run([img], [quality])[0]
    ref = cv2_roundtrip(img, quality)
    diff = np.abs(out.astype(int) - ref.astype(int))
    assert diff.max() <= 2 and diff.mean() < 0.1  # same codec settings; libjpeg builds may differ by rounding
    err = np.abs(out.astype(int) - img.astype(int)).mean()
    assert 0 < err < {5: 40, 50: 15, 95: 8}[quality]


def test_lower_quality_loses_more_and_frames_and_gray_work():
    img = smooth_image(32, 32, 0)
    lo, hi = run([img, img], [10, 90])
    assert np.abs(lo.astype(int) - img).mean() > np.abs(hi.astype(int) - img).mean()
    gray = img[..., :1].copy()
    seq = np.stack([img, img[::-1].copy()])
    out_gray, out_seq = run([gray, seq], [50, 50])
    assert out_gray.shape == gray.shape and np.abs(out_gray.astype(int) - gray).mean() < 10
    np.testing.assert_array_equal(out_seq[0], run([img], [50])[0])


def test_bad_quality_and_channels_are_sample_errors():
    img = smooth_image(8, 8, 1)
    with pytest.raises(_engine.SampleError) as e:
        run([img, img], [50, 0])
    assert e.value.args[1] == 1
    with pytest.raises(_engine.SampleError):
        run([np.zeros((4, 4, 2), np.uint8)], [50])
