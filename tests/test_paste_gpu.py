"""multi_paste's GPU kernel (csrc/cuda/paste.cu) against the CPU, with regions per sample given as
argument inputs. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, types  # noqa: E402

from test_gpu_breadth import assert_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(8)
IMAGES = [rng.integers(0, 256, (40, 60, 3), dtype=np.uint8) for _ in range(3)]
IDS = [np.array(v, np.int32) for v in ([2, 0], [1], [0, 1, 2])]
OUT = [np.array(v, np.int32) for v in ([[0, 0], [5, 7]], [[3, 2]], [[0, 0], [1, 1], [10, 20]])]
SHAPES = [np.array(v, np.int32) for v in ([[10, 10], [12, 20]], [[15, 25]], [[5, 5], [39, 59], [10, 10]])]


@pytest.mark.parametrize("dtype", [None, types.FLOAT])
def test_multi_paste_with_in_ids(dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    assert_mixed(lambda x, i, o, s: fn.multi_paste(x, in_ids=i, out_anchors=o, shapes=s, output_size=[50, 70], **kw),
                 [IMAGES], args=[IDS, OUT, SHAPES], layouts=["HWC"])


def test_multi_paste_of_two_inputs():
    assert_mixed(lambda x: fn.multi_paste(x, fn.flip(x)), [IMAGES], layouts=["HWC"])
