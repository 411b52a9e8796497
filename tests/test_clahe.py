"""clahe on the CPU against OpenCV's CLAHE (the algorithm DALI follows): grey and per-channel images
equal OpenCV's; RGB through Lab's L within one level (OpenCV converts back from Lab in fixed point)."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es, samples

cv2 = pytest.importorskip("cv2")

rng = np.random.default_rng(12)
GREY = [np.clip(rng.normal(100, 30, (37, 53, 1)), 0, 255).astype(np.uint8),
        np.clip(rng.normal(60, 10, (48, 64, 1)), 0, 255).astype(np.uint8)]
RGB = [np.clip(rng.normal(110, 40, (37, 53, 3)), 0, 255).astype(np.uint8),
       np.clip(rng.normal(90, 25, (40, 40, 3)), 0, 255).astype(np.uint8)]


def _opencv(plane, tiles_x, tiles_y, clip_limit):
    return cv2.createCLAHE(clipLimit=clip_limit, tileGridSize=(tiles_x, tiles_y)).apply(np.ascontiguousarray(plane))


@pytest.mark.parametrize("tiles_x, tiles_y, clip_limit", [(4, 3, 2.0), (8, 8, 4.0), (1, 1, 1.0), (5, 7, 0.0)])
def test_grey_and_per_channel_equal_opencv(tiles_x, tiles_y, clip_limit):
    out, = run_es(lambda x: fn.clahe(x, tiles_x=tiles_x, tiles_y=tiles_y, clip_limit=clip_limit), GREY,
                  layouts=["HWC"])
    for img, o in zip(GREY, samples(out)):
        np.testing.assert_array_equal(o[..., 0], _opencv(img[..., 0], tiles_x, tiles_y, clip_limit))
    out, = run_es(lambda x: fn.clahe(x, tiles_x=tiles_x, tiles_y=tiles_y, clip_limit=clip_limit, luma_only=False),
                  RGB, layouts=["HWC"])
    for img, o in zip(RGB, samples(out)):
        for c in range(3):
            np.testing.assert_array_equal(o[..., c], _opencv(img[..., c], tiles_x, tiles_y, clip_limit))


def test_rgb_through_lab_luminance():
    out, = run_es(lambda x: fn.clahe(x, tiles_x=4, tiles_y=3, clip_limit=2.0), RGB, layouts=["HWC"])
    for img, o in zip(RGB, samples(out)):
        lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB)
        lab[..., 0] = _opencv(lab[..., 0], 4, 3, 2.0)
        ref = cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
        assert np.abs(o.astype(int) - ref).max() <= 1
        assert np.mean(o != ref) < 0.1


def test_errors():
    with pytest.raises(RuntimeError, match="1 or 3 channels"):
        run_es(lambda x: fn.clahe(x, tiles_x=2, tiles_y=2, clip_limit=2.0), [np.zeros((8, 8, 2), np.uint8)],
               layouts=["HWC"])
    with pytest.raises(NotImplementedError, match="bins=128"):
        run_es(lambda x: fn.clahe(x, tiles_x=2, tiles_y=2, clip_limit=2.0, bins=128), GREY, layouts=["HWC"])
    with pytest.raises(ValueError, match="tiles_x must be positive"):
        run_es(lambda x: fn.clahe(x, tiles_x=0, tiles_y=2, clip_limit=2.0), GREY, layouts=["HWC"])
