"""clahe's GPU path run on the host: csrc/cuda/clahe.cu compiled as C++ (tests/_cuda_on_host.py; a
block of the table kernel is 256 host threads meeting at a barrier for __syncthreads) behind
GpuKernels.clahe, driven by the operator. Results must equal the CPU operator's; the GPU test
(tests/test_clahe_gpu.py) runs the real kernels."""
import numpy as np
import pytest

from penstock.operators import clahe

from _cuda_on_host import BLOCK_THREADS, HostContext, compile_for_host
from test_filter_emulated import run_op

HARNESS = BLOCK_THREADS + r"""
static float __fadd_rn(float a, float b) { return a + b; }
static float __fmul_rn(float a, float b) { return a * b; }
static float __fdiv_rn(float a, float b) { return a / b; }
#include "SOURCE"
extern "C" {
void run_clahe_planes(int g, int b, const u8* s, u8* scratch, const i64* d, const i64* bs, int n, const i32* gm,
                      const i32* cb, const i32* k) {
  launch(g, b, false, [&] { clahe_planes(s, scratch, d, bs, n, gm, cb, k); });
}
void run_clahe_tables(int g, int b, const u8* scratch, u8* luts, const i64* tiles) {
  launch(g, b, true, [&] { clahe_tables(scratch, luts, tiles); });
}
void run_clahe_apply(int g, int b, const u8* s, u8* d, const i64* desc, const i64* bs, int n, const u8* luts,
                     const i32* gm, const i32* cb, const i32* k) {
  launch(g, b, false, [&] { clahe_apply(s, d, desc, bs, n, luts, gm, cb, k); });
}
}
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("clahe_emulated"), "clahe.cu", HARNESS))


rng = np.random.default_rng(13)
RGB = [np.clip(rng.normal(110, 40, (h, w, 3)), 0, 255).astype(np.uint8) for h, w in ((37, 53), (40, 40))]
GREY = [np.ascontiguousarray(im[..., :1]) for im in RGB]


@pytest.mark.parametrize("images", [GREY, RGB], ids=["grey", "rgb"])
@pytest.mark.parametrize("kw", [{"tiles_x": 4, "tiles_y": 3, "clip_limit": 2.0},
                                {"tiles_x": 2, "tiles_y": 5, "clip_limit": 0.0, "luma_only": False}])
def test_gpu_path_equals_the_cpu(gpu, images, kw):
    for c, g in zip(run_op(clahe.CLAHE, [images], "HWC", kw, None), run_op(clahe.CLAHE, [images], "HWC", kw, gpu)):
        np.testing.assert_array_equal(g, c)
