"""water, sphere and jitter's GPU path run on the host: csrc/cuda/displacement.cu compiled as C++
(tests/_cuda_on_host.py) behind GpuKernels.displacement, driven by the operators' planning. Results
must equal the CPU operators' byte for byte (host sin/cos on both sides); the GPU test
(tests/test_displacement_gpu.py) runs the real kernels."""
import numpy as np
import pytest

from penstock import types as dtypes
from penstock.operators import displacement

from _cuda_on_host import HostContext, compile_for_host
from test_filter_emulated import run_op

HARNESS = r"""
#include <cmath>
static float __fadd_rn(float a, float b) { return a + b; }
static float __fmul_rn(float a, float b) { return a * b; }
static float __fdiv_rn(float a, float b) { return a / b; }
static float __fsqrt_rn(float a) { return std::sqrt(a); }
#include "SOURCE"
#define RUN(T)                                                                                               \
  extern "C" void run_displace_##T(int grid, int block, const T* s, T* d, const i64* desc, const i64* bs,     \
                                   int n, const double* params, const int* masks, int kind, int linear,      \
                                   float fill) {                                                             \
    blockDim.x = block;                                                                                      \
    for (int blk = 0; blk < grid; ++blk)                                                                     \
      for (int t = 0; t < block; ++t) {                                                                      \
        blockIdx.x = blk; threadIdx.x = t;                                                                   \
        displace_##T(s, d, desc, bs, n, params, masks, kind, linear, fill);                                  \
      }                                                                                                      \
  }
RUN(u8) RUN(f32)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("displacement_emulated"), "displacement.cu", HARNESS,
                                        with_common=True))


rng = np.random.default_rng(4)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((31, 40), (17, 9), (64, 33))]


@pytest.mark.parametrize("schema, kw", [
    (displacement.WATER, {}), (displacement.WATER, {"interp_type": dtypes.INTERP_LINEAR, "fill_value": 17.0}),
    (displacement.WATER, {"ampl_x": 3.5, "freq_y": 0.3, "phase_x": 2.0}),
    (displacement.SPHERE, {}), (displacement.SPHERE, {"interp_type": dtypes.INTERP_LINEAR}),
    (displacement.JITTER, {"nDegree": 5}), (displacement.JITTER, {"interp_type": dtypes.INTERP_LINEAR}),
])
@pytest.mark.parametrize("as_float", [False, True])
def test_gpu_path_equals_the_cpu(gpu, schema, kw, as_float):
    images = [im.astype(np.float32) / 7 for im in IMAGES] if as_float else IMAGES
    cpu = run_op(schema, [images], "HWC", kw, None)
    emulated = run_op(schema, [images], "HWC", kw, gpu)
    for c, g in zip(cpu, emulated):
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_array_equal(g, c)
