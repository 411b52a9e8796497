"""experimental.warp_perspective and experimental.remap on the CPU against OpenCV (whose arithmetic
DALI 2.4's CPU warp_perspective has), their GPU paths on the host by emulation, and on the GPU."""
import numpy as np
import pytest

from penstock import fn, types
from penstock.operators import warp
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host
from _util import run_es, samples
from test_filter_emulated import run_op

cv2 = pytest.importorskip("cv2")

rng = np.random.default_rng(22)
IMAGES = [rng.integers(0, 256, (20, 24, 3), dtype=np.uint8), rng.integers(0, 256, (31, 17, 3), dtype=np.uint8)]
MATRIX = np.array([[1.1, 0.1, -2.3], [-0.05, 0.95, 1.7], [0.001, 0.002, 1.0]])
INTERP = {"INTERP_NN": cv2.INTER_NEAREST, "INTERP_LINEAR": cv2.INTER_LINEAR, "INTERP_CUBIC": cv2.INTER_CUBIC}
BORDER = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
          "reflect_101": cv2.BORDER_REFLECT_101, "wrap": cv2.BORDER_WRAP}


def _opencv(img, m, interp, border, origin, size=None, fill=7):
    m = np.asarray(m, np.float32).astype(np.float64)
    if origin == "corner":
        shift = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
        m = np.linalg.inv(shift) @ m @ shift
    h, w = size or img.shape[:2]
    return cv2.warpPerspective(img, m, (w, h), flags=INTERP[interp] | cv2.WARP_INVERSE_MAP,
                               borderMode=BORDER[border], borderValue=(fill,) * 3)


@pytest.mark.parametrize("interp", list(INTERP))
@pytest.mark.parametrize("border", list(BORDER))
@pytest.mark.parametrize("origin", ["corner", "center"])
def test_equals_opencv(interp, border, origin):
    out, = run_es(lambda x: fn.experimental.warp_perspective(
        x, matrix=MATRIX.reshape(-1).tolist(), interp_type=getattr(types, interp), border_mode=border,
        pixel_origin=origin, fill_value=[7], size=[25, 19]), IMAGES, layouts=["HWC"])
    for img, o in zip(IMAGES, samples(out)):  # the order of a cubic sum's terms can move a value by one level
        diff = np.abs(o.astype(int) - _opencv(img, MATRIX, interp, border, origin, (25, 19)))
        assert diff.max() <= (1 if interp == "INTERP_CUBIC" else 0) and np.mean(diff > 0) < 0.005


def test_forward_matrix_input_and_floats():
    mats = [np.linalg.inv(MATRIX).astype(np.float32)] * 2
    out, = run_es(lambda x, m: fn.experimental.warp_perspective(x, m, inverse_map=False), IMAGES, mats,
                  layouts=["HWC", None])
    for img, o in zip(IMAGES, samples(out)):
        ref = _opencv(img, np.linalg.inv(np.linalg.inv(MATRIX).astype(np.float32).astype(np.float64)),
                      "INTERP_LINEAR", "constant", "corner", fill=0)
        assert np.abs(o.astype(int) - ref).max() <= 1
    floats = [im.astype(np.float32) / 3 for im in IMAGES]
    out, = run_es(lambda x: fn.experimental.warp_perspective(x, matrix=MATRIX.reshape(-1).tolist()), floats,
                  layouts=["HWC"])
    for img, o in zip(floats, samples(out)):
        np.testing.assert_allclose(o, _opencv(img, MATRIX, "INTERP_LINEAR", "constant", "corner", fill=0), atol=1e-3)


def _maps(h, w):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    return xx * 0.9 + 1.3 + np.sin(yy / 3), yy * 1.1 - 0.7


@pytest.mark.parametrize("interp", ["INTERP_NN", "INTERP_LINEAR"])
def test_remap_with_centre_origin_is_opencv(interp):
    mapx, mapy = zip(*[_maps(15, 13) for _ in IMAGES])
    out, = run_es(lambda x, mx, my: fn.experimental.remap(x, mx, my, interp=getattr(types, interp),
                                                          pixel_origin="center"),
                  IMAGES, list(mapx), list(mapy), layouts=["HWC", None, None])
    for img, mx, my, o in zip(IMAGES, mapx, mapy, samples(out)):
        ref = cv2.remap(img, mx, my, INTERP[interp], borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        assert o.shape == (15, 13, 3)
        assert np.abs(o.astype(int) - ref).max() <= 1  # OpenCV cuts coordinates to 1/32 of a pixel


HARNESS = r"""
#include <cmath>
static float __fadd_rn(float a, float b) { return a + b; }
static float __fmul_rn(float a, float b) { return a * b; }
static float __fdiv_rn(float a, float b) { return a / b; }
static float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
#include "SOURCE"
#define LOOP(call) blockDim.x = block; \
  for (int blk = 0; blk < grid; ++blk) for (int t = 0; t < block; ++t) { blockIdx.x = blk; threadIdx.x = t; call; }
#define RUN(T)                                                                                                  \
  extern "C" void run_warp_perspective_##T(int grid, int block, const T* s, T* d, const i64* desc,              \
                                           const i64* bs, int n, const double* m, const double* fill, int fs,   \
                                           int interp, int border) {                                           \
    LOOP(warp_perspective_##T(s, d, desc, bs, n, m, fill, fs, interp, border)) }                               \
  extern "C" void run_remap_##T(int grid, int block, const T* s, T* d, const i64* desc, const i64* bs, int n,   \
                                const float* mx, const float* my, int interp, float shift) {                   \
    LOOP(remap_##T(s, d, desc, bs, n, mx, my, interp, shift)) }                                                \
  extern "C" void run_warp_affine_##T(int grid, int block, const T* s, T* d, const i64* desc, const i64* bs,    \
                                      int n, int c, const float* m, int linear, int has_fill, float fill) {     \
    LOOP(warp_affine_##T(s, d, desc, bs, n, c, m, linear, has_fill, fill)) }
RUN(u8) RUN(f32)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("warp_emulated"), "warp.cu", HARNESS,
                                        with_common=True))


@pytest.mark.parametrize("kw", [{"interp_type": types.INTERP_NN, "border_mode": "wrap"},
                                {"border_mode": "reflect", "fill_value": [3.0]},
                                {"interp_type": types.INTERP_CUBIC, "pixel_origin": "center", "size": [22, 30]}])
@pytest.mark.parametrize("as_float", [False, True])
def test_emulated_gpu_equals_the_cpu(gpu, kw, as_float):
    images = [im.astype(np.float32) / 3 for im in IMAGES] if as_float else IMAGES
    kw = dict(kw, matrix=MATRIX.reshape(-1).tolist())
    for c, g in zip(run_op(warp.WarpPerspective.schema, [images], "HWC", kw, None),
                    run_op(warp.WarpPerspective.schema, [images], "HWC", kw, gpu)):
        np.testing.assert_array_equal(g, c)
    maps = [_maps(15, 13) for _ in IMAGES]
    inputs = [images, [m[0] for m in maps], [m[1] for m in maps]]
    for c, g in zip(run_op(warp.Remap.schema, inputs, "HWC", {}, None), run_op(warp.Remap.schema, inputs, "HWC", {}, gpu)):
        np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("kw", [{"keep_size": True, "fill_value": 9}, {"interp_type": types.INTERP_NN}])
def test_emulated_gpu_rotation_equals_the_cpu(gpu, kw):
    """rotate's plan (the engine's sizes and matrices) through warp.cu's affine kernel."""
    angles = TensorListCPU([np.array(a, np.float32) for a in (30.0, -95.5)])
    cpu = run_op(warp.Rotate.schema, [IMAGES], "HWC", kw, None, {"angle": angles})
    emulated = run_op(warp.Rotate.schema, [IMAGES], "HWC", kw, gpu, {"angle": angles})
    for c, g in zip(cpu, emulated):
        assert c.shape == g.shape
        assert np.abs(g.astype(int) - c.astype(int)).max() <= 1  # the same float math, contracted otherwise


@pytest.mark.gpu
def test_gpu_equals_cpu():
    pytest.importorskip("cupy")
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    from test_gpu_breadth import assert_mixed
    for interp in (types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC):
        assert_mixed(lambda x: fn.experimental.warp_perspective(x, matrix=MATRIX.reshape(-1).tolist(),
                                                                interp_type=interp, border_mode="reflect_101"),
                     [IMAGES], layouts=["HWC"])
    maps = [_maps(15, 13) for _ in IMAGES]
    assert_mixed(lambda x, mx, my: fn.experimental.remap(x, mx, my), [IMAGES, [m[0] for m in maps],
                                                                      [m[1] for m in maps]], layouts=["HWC", None, None])
