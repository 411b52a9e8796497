"""resize_crop_mirror (one resampling of the crop window's source) against resize, crop and flip in
turn, and experimental.resize (resize under DALI's GPU variant's name); the GPU test compares devices."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es

rng = np.random.default_rng(21)
IMAGES = [rng.integers(0, 256, (24, 32, 3), dtype=np.uint8).astype(np.float32),
          rng.integers(0, 256, (30, 18, 3), dtype=np.uint8).astype(np.float32)]


@pytest.mark.parametrize("resize_kw, crop_kw, mirror", [
    ({"resize_x": 16, "resize_y": 12}, {"crop": (8, 10)}, 0),
    ({"resize_x": 16, "resize_y": 12}, {"crop": (8, 10), "crop_pos_x": 0.2, "crop_pos_y": 0.9}, 1),
    ({"resize_shorter": 20}, {"crop_h": 15, "crop_w": 11}, 3),
    ({"resize_x": 40, "resize_y": 30, "interp_type": types.INTERP_CUBIC}, {"crop": (21, 13)}, 2),
])
def test_equals_resize_crop_and_flip(resize_kw, crop_kw, mirror):
    fused, = run_es(lambda x: fn.resize_crop_mirror(x, mirror=mirror, **resize_kw, **crop_kw), IMAGES,
                    layouts=["HWC"])
    steps, = run_es(lambda x: fn.flip(fn.crop(fn.resize(x, **resize_kw), **crop_kw), horizontal=mirror & 1,
                                      vertical=(mirror >> 1) & 1), IMAGES, layouts=["HWC"])
    for i in range(len(IMAGES)):
        np.testing.assert_allclose(fused.at(i), steps.at(i), atol=1e-3)


def test_crop_position_is_checked_and_experimental_resize_is_resize():
    with pytest.raises(RuntimeError, match="crop_pos_x must be in"):
        run_es(lambda x: fn.resize_crop_mirror(x, resize_x=16, resize_y=12, crop=(8, 8), crop_pos_x=1.5), IMAGES,
               layouts=["HWC"])
    a, b = run_es(lambda x: (fn.experimental.resize(x, size=(13, 17)), fn.resize(x, size=(13, 17))), IMAGES,
                  layouts=["HWC"])
    for i in range(len(IMAGES)):
        np.testing.assert_array_equal(a.at(i), b.at(i))


@pytest.mark.gpu
def test_gpu_equals_cpu():
    cp = pytest.importorskip("cupy")  # noqa: F841
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    from test_gpu_breadth import assert_mixed
    assert_mixed(lambda x: fn.resize_crop_mirror(x, resize_shorter=20, crop=(15, 11), crop_pos_x=0.3, mirror=1),
                 [IMAGES], layouts=["HWC"], rtol=1e-4)
    assert_mixed(lambda x: fn.experimental.resize(x, resize_x=50, resize_y=20), [IMAGES], layouts=["HWC"], rtol=1e-4)
