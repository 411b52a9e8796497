"""debayer's GPU kernel (csrc/cuda/debayer.cu) against the CPU. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn  # noqa: E402

from test_gpu_breadth import assert_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(17)


@pytest.mark.parametrize("algorithm", ["bilinear_ocv", "gray_ocv"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer(algorithm, dtype):
    raws = [rng.integers(0, np.iinfo(dtype).max, (h, w)).astype(dtype) for h, w in ((480, 640), (34, 18))]
    blues = [np.array([0, 1], np.int32), np.array([1, 0], np.int32)]
    assert_mixed(lambda x, b: fn.debayer(x, blue_position=b, algorithm=algorithm), [raws], args=[blues],
                 layouts=["HW"])
