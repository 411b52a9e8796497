"""crop_mirror_normalize's and the decoded windows' gather GPU kernels run on the host
(csrc/cuda/crop_mirror_normalize.cu and image_decode.cu compiled as C++ with common.cuh,
tests/_cuda_on_host.py) behind GpuKernels: each thread takes several elements (ITEMS), so samples
whose sizes are not multiples of a block's elements check the loop's ends. Results must equal the
CPU kernel's and numpy's; the GPU tests (tests/test_gpu_operators.py) run the real kernels."""
import numpy as np
import pytest

from penstock import _engine
from penstock._cuda.kernels import BLOCK, ITEMS

from _cuda_on_host import HostContext, compile_for_host


def _runner(name, signature, call):
    return f"""
extern "C" void run_{name}(int grid, int block, {signature}) {{
  blockDim.x = block;
  for (int b = 0; b < grid; ++b)
    for (int t = 0; t < block; ++t) {{
      blockIdx.x = b; threadIdx.x = t;
      {name}({call});
    }}
}}
"""


CMN_HARNESS = '#include "SOURCE"\n' + _runner(
    "cmn_u8_f32", "const u8* src, float* dst, const i64* desc, const i64* bs, int n, int nd, int C, int cout, "
                  "int cdim, const float* mean, const float* inv_std, float shift, const float* fill",
    "src, dst, desc, bs, n, nd, C, cout, cdim, mean, inv_std, shift, fill")
GATHER_HARNESS = '#include "SOURCE"\n' + _runner(
    "gather_u8", "u8* dst, const i64* desc, const i64* bs, int n", "dst, desc, bs, n")

rng = np.random.default_rng(12)


@pytest.fixture(scope="module")
def cmn_ctx(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("cmn"), "crop_mirror_normalize.cu", CMN_HARNESS,
                                        with_common=True))


@pytest.fixture(scope="module")
def gather_ctx(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("gather"), "image_decode.cu", GATHER_HARNESS,
                                        with_common=True))


def _packed(arrays):
    shapes = np.array([a.shape for a in arrays], np.int64)
    offsets = np.concatenate([[0], np.cumsum(shapes.prod(axis=1))[:-1]]).astype(np.int64)
    return np.concatenate([a.reshape(-1) for a in arrays]), shapes, offsets


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("pad", [False, True])
def test_crop_mirror_normalize_with_several_elements_per_thread_equals_the_cpu_kernel(cmn_ctx, layout, pad):
    # sizes around a block's elements (BLOCK * ITEMS), windows partly outside their images
    images = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in [(37, 29), (64, 64), (5, 7), (91, 45)]]
    src, src_shapes, src_offsets = _packed(images)
    windows = np.array([[30, 22], [31, 33], [9, 9], [63, 41]], np.int64)
    anchors = np.array([[3, -2], [16, 32], [-1, -1], [20, 0]], np.int64)
    cout = 3 + int(pad)
    dst_shapes = np.column_stack([windows, np.full(4, cout)]) if layout == "HWC" else \
        np.column_stack([np.full(4, cout), windows])
    assert (dst_shapes.prod(axis=1) % (BLOCK * ITEMS) != 0).all()
    cdim = 2 if layout == "HWC" else 0
    dst_offsets = np.concatenate([[0], np.cumsum(dst_shapes.prod(axis=1))[:-1]]).astype(np.int64)
    total = int(dst_shapes.prod(axis=1).sum())
    mirror = np.array([0, 1, 1, 0], np.uint8)
    mean = np.tile(np.array([120.0, 110.0, 100.0], np.float32), (4, 1)) + np.arange(4, dtype=np.float32)[:, None]
    std = np.tile(np.array([50.0, 60.0, 70.0], np.float32), (4, 1))
    fill = np.array([1.5, -2.0, 0.25, 7.0], np.float32)[:cout]
    outs = []
    for kernels in (_engine, cmn_ctx.kernels):
        dst = np.full(total, np.nan, np.float32)
        kernels.crop_mirror_normalize(_engine.ThreadPool(1), src, src_shapes, src_offsets, 0, dst, dst_shapes,
                                      dst_offsets, 9, anchors, mirror, mean, std, 1.0, 0.0, fill, cdim, pad)
        outs.append(dst)
    assert not np.isnan(outs[1]).any()  # every element written
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def test_the_windows_gather_with_several_elements_per_thread_copies_each_window(gather_ctx):
    images = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in [(50, 70), (33, 17), (80, 64)]]
    pitches = np.array([img.shape[1] * 3 for img in images], np.int64)
    windows = np.array([[3, 5, 41, 61], [0, 0, 33, 17], [10, 2, 37, 59]], np.int64)
    reverse = np.array([0, 1, 0], np.int64)
    sizes = windows[:, 2] * windows[:, 3] * 3
    assert (sizes % (BLOCK * ITEMS) != 0).all()
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    dst = np.zeros(int(sizes.sum()), np.uint8)
    pointers = np.array([img.ctypes.data for img in images], np.uint64)  # host memory stands for the device's
    gather_ctx.kernels.gather_images(pointers, pitches, windows, np.full(3, 3, np.int64), reverse, dst, offsets)
    for img, (y, x, h, w), rev, off, size in zip(images, windows, reverse, offsets, sizes):
        want = img[y:y + h, x:x + w, ::-1] if rev else img[y:y + h, x:x + w]
        np.testing.assert_array_equal(dst[off:off + size].reshape(h, w, 3), want)
