"""clahe's GPU kernels (csrc/cuda/clahe.cu) against the CPU. Grey and per-channel images are equal;
through Lab's L the device's powf may move a value by one level. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn  # noqa: E402

from test_gpu_breadth import assert_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(14)
RGB = [np.clip(rng.normal(110, 40, (h, w, 3)), 0, 255).astype(np.uint8) for h, w in ((240, 320), (97, 61))]


@pytest.mark.parametrize("kw, atol", [({"tiles_x": 8, "tiles_y": 8, "clip_limit": 2.0}, 1),
                                      ({"tiles_x": 3, "tiles_y": 5, "clip_limit": 4.0, "luma_only": False}, 0)])
def test_clahe(kw, atol):
    assert_mixed(lambda x: fn.clahe(x, **kw), [RGB], layouts=["HWC"], atol_int=atol)
    grey = [np.ascontiguousarray(im[..., :1]) for im in RGB]
    assert_mixed(lambda x: fn.clahe(x, **kw), [grey], layouts=["HWC"])
