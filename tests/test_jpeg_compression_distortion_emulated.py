"""The CUDA jpeg_compression_distortion kernels (csrc/cuda/jpeg_compression_distortion.cu) run on the host: the
.cu file is compiled as C++ with the few CUDA names it uses defined here, each launch is a loop
over blocks and threads, and the result must equal the CPU operator's libjpeg-turbo round trip
byte for byte (the GPU test compares the real launches with the CPU)."""
import ctypes

import numpy as np
import pytest

from penstock import _engine
from penstock._cuda._image_plans import jpeg_plan, jpeg_tables

from _cuda_on_host import compile_for_host

HARNESS = r"""
static Dim blockIdx, threadIdx, blockDim{256};
static inline int __clz(unsigned v) { return __builtin_clz(v); }
#include "SOURCE"
extern "C" void run(const u8* src, u8* planes, u8* dst, const i64* desc, const i64* bs, const i64* ps, int n,
                    const i32* tables, int grid_b, int grid_p) {
  for (int b = 0; b < grid_b; ++b)
    for (threadIdx.x = 0; threadIdx.x < 256; ++threadIdx.x) { blockIdx.x = b; jpeg_blocks(src, planes, desc, bs, n, tables); }
  for (int b = 0; b < grid_p; ++b)
    for (threadIdx.x = 0; threadIdx.x < 256; ++threadIdx.x) { blockIdx.x = b; jpeg_pixels(planes, dst, desc, ps, n); }
}
"""


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    lib = compile_for_host(tmp_path_factory.mktemp("jpeg_emulated"), "jpeg_compression_distortion.cu", HARNESS)

    def ptr(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    def blocks(work):
        start = np.zeros(len(work) + 1, np.int64)
        np.cumsum((np.asarray(work, np.int64) + 255) // 256, out=start[1:])
        return start, int(start[-1])

    def run(samples, qualities):
        shapes, offsets, src = _pack(samples)
        dst = np.zeros_like(src)
        desc, plane_bytes = jpeg_plan(shapes, offsets, offsets)
        desc = np.ascontiguousarray(desc)
        tables = np.ascontiguousarray(jpeg_tables(qualities))
        planes = np.zeros(max(plane_bytes, 1), np.uint8)
        (bs, grid_b), (ps, grid_p) = blocks(desc[:, 7]), blocks(desc[:, 8])
        lib.run(ptr(src), ptr(planes), ptr(dst), ptr(desc), ptr(bs), ptr(ps), ctypes.c_int(len(desc)), ptr(tables),
                ctypes.c_int(grid_b), ctypes.c_int(grid_p))
        return dst
    return run


def _pack(samples):
    shapes = np.array([s.shape for s in samples], np.int64)
    vols = shapes.prod(axis=1)
    offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    return shapes, offsets, np.concatenate([s.reshape(-1) for s in samples])


def _cpu(samples, qualities):
    shapes, offsets, src = _pack(samples)
    dst = np.zeros_like(src)
    _engine.jpeg_compression_distortion(_engine.ThreadPool(1), src, shapes, offsets, dst, offsets,
                                        np.asarray(qualities, np.int64))
    return dst


def _smooth(rng, f, h, w, c):
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([128 + 100 * np.sin(x / 7.0 + k) * np.cos(y / 5.0 - k) for k in range(c)], -1)
    return np.clip(base[None] + rng.normal(0, 20, (f, h, w, c)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("quality", [1, 10, 50, 75, 95, 100])
def test_emulated_kernels_equal_libjpeg(emulated, quality):
    rng = np.random.default_rng(quality)
    sizes = [(1, 16, 16, 3), (1, 37, 53, 3), (2, 21, 90, 3), (1, 1, 1, 3), (1, 3, 4, 3), (1, 5, 6, 3),
             (1, 17, 2, 3), (1, 9, 3, 1), (1, 40, 33, 1), (1, 0, 7, 3)]
    samples = [s for f, h, w, c in sizes for s in (_smooth(rng, f, h, w, c),
                                                   rng.integers(0, 256, (f, h, w, c), dtype=np.uint8))]
    q = np.full(len(samples), quality)
    q[::3] = rng.integers(1, 101, len(q[::3]))  # per-sample qualities
    np.testing.assert_array_equal(emulated(samples, q), _cpu(samples, q))
