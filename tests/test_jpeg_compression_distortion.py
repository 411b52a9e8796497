"""jpeg_compression_distortion in pipelines against an OpenCV encode/decode round trip."""
import numpy as np
from pipeline_run import run_once
from test_jpeg_compression_distortion_kernel import cv2_roundtrip, smooth_image

from penstock import fn


def test_default_quality_50_and_per_sample_quality():
    imgs = [smooth_image(24, 40, 0), smooth_image(17, 9, 1)]
    q = [np.int32(10), np.int32(90)]
    default, per_sample = run_once(lambda x, qq: (fn.jpeg_compression_distortion(x),
                                                  fn.jpeg_compression_distortion(x, quality=qq)), imgs, q)
    for img, qq, a, b in zip(imgs, q, default, per_sample):
        assert np.abs(a.astype(int) - cv2_roundtrip(img, 50)).max() <= 2
        assert np.abs(b.astype(int) - cv2_roundtrip(img, int(qq))).max() <= 2


def test_sequences():
    seq = np.stack([smooth_image(16, 16, 2), smooth_image(16, 16, 3)])
    out = run_once(lambda x: fn.jpeg_compression_distortion(x, quality=70), [seq], layout="FHWC")[0][0]
    for f in range(2):
        assert np.abs(out[f].astype(int) - cv2_roundtrip(seq[f], 70)).max() <= 2


def test_quality_outside_1_100_is_clamped():
    imgs = [smooth_image(24, 40, 4), smooth_image(17, 9, 5)]
    q = [np.int32(0), np.int32(-7)]
    low, high = run_once(lambda x, qq: (fn.jpeg_compression_distortion(x, quality=qq),
                                        fn.jpeg_compression_distortion(x, quality=150)), imgs, q)
    for img, a, b in zip(imgs, low, high):
        assert np.abs(a.astype(int) - cv2_roundtrip(img, 1)).max() <= 2
        assert np.abs(b.astype(int) - cv2_roundtrip(img, 100)).max() <= 2
