"""The filter family's GPU kernels (csrc/cuda/filter.cu) against the CPU: filter, laplacian, median_blur,
erode and dilate, the same graph on both devices. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, types  # noqa: E402

from test_gpu_breadth import assert_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(2)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((61, 47), (20, 33), (128, 96))]
FILTERS = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((3, 3), (5, 2), (7, 7))]


@pytest.mark.parametrize("kw", [{}, {"border": "constant"}, {"border": "wrap"}, {"border": "clamp"},
                                {"border": "reflect_1001", "anchor": [0, 1]}, {"mode": "valid"},
                                {"dtype": types.FLOAT}])
def test_filter(kw):
    assert_mixed(lambda x, f: fn.filter(x, f, **kw), [IMAGES, FILTERS], layouts=["HWC", None])


def test_filter_of_float16_volumes():
    volumes = [rng.uniform(-2, 2, (9, 10, 11)).astype(np.float16) for _ in range(2)]
    kernels = [rng.uniform(-1, 1, (3, 3, 3)).astype(np.float32)] * 2
    assert_mixed(lambda x, f: fn.filter(x, f, border="clamp"), [volumes, kernels], layouts=["DHW", None])


@pytest.mark.parametrize("kw", [{}, {"window_size": [3, 7], "smoothing_size": [1, 5]}, {"normalized_kernel": True},
                                {"window_size": 5, "dtype": types.FLOAT}])
def test_laplacian(kw):
    assert_mixed(lambda x: fn.laplacian(x, **kw), [IMAGES], layouts=["HWC"], rtol=1e-4)


@pytest.mark.parametrize("graph", [
    lambda x: fn.experimental.median_blur(x, window_size=[5, 3]),
    lambda x: fn.experimental.erode(x, mask_size=[3, 5], iterations=2),
    lambda x: fn.experimental.dilate(x, anchor=[0, 0], border_mode="reflect_101", iterations=3),
])
def test_rank_filters(graph):
    assert_mixed(graph, [IMAGES], layouts=["HWC"])
