"""water, sphere and jitter's GPU kernels (csrc/cuda/displacement.cu) against the CPU. The device's sinf
and cosf may differ from the host's in the last bit, which can move a nearest-neighbour read by one
pixel: water is compared pixel by pixel allowing a few such reads. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, types  # noqa: E402

from test_gpu_breadth import assert_mixed, run_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(6)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((96, 128), (31, 17))]


@pytest.mark.parametrize("graph", [
    lambda x: fn.sphere(x), lambda x: fn.sphere(x, interp_type=types.INTERP_LINEAR, fill_value=9.0),
    lambda x: fn.jitter(x, nDegree=6, seed=5), lambda x: fn.jitter(x, interp_type=types.INTERP_LINEAR, seed=5),
])
def test_sphere_and_jitter(graph):
    assert_mixed(graph, [IMAGES], layouts=["HWC"], atol_int=1)


@pytest.mark.parametrize("kw", [{}, {"interp_type": types.INTERP_LINEAR, "ampl_x": 4.0, "phase_y": 1.0}])
def test_water(kw):
    cpu = run_mixed("cpu", lambda x: fn.water(x, **kw), [IMAGES], layouts=["HWC"])
    gpu = run_mixed("gpu", lambda x: fn.water(x, **kw), [IMAGES], layouts=["HWC"])
    for c, g in zip(cpu[0][0], gpu[0][0]):
        assert c.shape == g.shape
        assert np.mean(c != g) < 0.01
