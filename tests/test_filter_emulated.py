"""The filter family's GPU path run on the host: csrc/cuda/filter.cu compiled as C++
(tests/_cuda_on_host.py) behind GpuKernels.filter / laplacian / rank_filter, driven by the operators'
own planning. Results must equal the CPU operators' (float16 is not emulated); the GPU test
(tests/test_filter_gpu.py) runs the real kernels."""
import types

import numpy as np
import pytest

from penstock import _engine
from penstock import types as dtypes
from penstock._operator import Workspace
from penstock._registry import kernel_for, resolve_defaults, split_args
from penstock.operators import filter as filters
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host

HARNESS = r"""
static float __fadd_rn(float a, float b) { return a + b; }
static float __fmul_rn(float a, float b) { return a * b; }
#include "SOURCE"
#define LOOP(call)                                                                  \
  blockDim.x = block;                                                               \
  for (int blk = 0; blk < grid; ++blk)                                                  \
    for (int t = 0; t < block; ++t) { blockIdx.x = blk; threadIdx.x = t; call; }
#define RUN_TYPE(T)                                                                                       \
  extern "C" void run_filter_##T##_##T(int grid, int block, const T* s, T* d, const i64* desc,          \
                                       const i64* bs, int n, const float* f, const float* fill, int border) { \
    LOOP(filter_##T##_##T(s, d, desc, bs, n, f, fill, border)) }                                              \
  extern "C" void run_separable_pass_##T(int grid, int block, const T* s, float* d, const i64* desc,     \
                                         const i64* bs, int n, const float* w) {                         \
    LOOP(separable_pass_##T(s, d, desc, bs, n, w)) }                                                     \
  extern "C" void run_store_float_##T(int grid, int block, const float* s, T* d, const i64* desc,        \
                                      const i64* bs, int n) {                                            \
    LOOP(store_float_##T(s, d, desc, bs, n)) }                                                           \
  extern "C" void run_rank_filter_##T(int grid, int block, const T* s, T* d, const i64* desc,            \
                                      const i64* bs, int n, int rank, int border) {                      \
    LOOP(rank_filter_##T(s, d, desc, bs, n, rank, border)) }
#define RUN_TO_FLOAT(T)                                                                                   \
  extern "C" void run_filter_##T##_f32(int grid, int block, const T* s, float* d, const i64* desc,       \
                                       const i64* bs, int n, const float* f, const float* fill, int border) { \
    LOOP(filter_##T##_f32(s, d, desc, bs, n, f, fill, border)) }
RUN_TYPE(u8) RUN_TYPE(i8) RUN_TYPE(u16) RUN_TYPE(i16) RUN_TYPE(f32)
RUN_TO_FLOAT(u8) RUN_TO_FLOAT(i16)
extern "C" void run_accumulate_scaled(int grid, int block, float* acc, const float* part, const i64* desc,
                                      const i64* bs, int n, const float* scales, int first) {
  LOOP(accumulate_scaled(acc, part, desc, bs, n, scales, first))
}
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("filter_emulated"), "filter.cu", HARNESS,
                                        with_common=True))


def run_op(schema, inputs, layout, kw, gpu_ctx, arg_inputs=None):
    """The operator's output for one batch, on the CPU (gpu_ctx None) or the emulated GPU."""
    scalars, tensors = split_args(schema, dict(kw))
    args = resolve_defaults(schema, scalars, {**tensors, **(arg_inputs or {})}, schema.fn_name)
    node = types.SimpleNamespace(args=args, name="op", schema=schema, device="gpu" if gpu_ctx else "cpu",
                                 resolved_seed=0, arg_inputs=arg_inputs or {})
    op = kernel_for(schema, node.device)(node, None)
    op.setup()
    batches = [TensorListCPU(inputs[0], layout)] + [TensorListCPU(x) for x in inputs[1:]]
    ws = Workspace(inputs=batches, arg_inputs=arg_inputs or {}, batch_size=len(inputs[0]), iteration=0, epoch=0,
                   pool=_engine.ThreadPool(2), op=op, gpu=gpu_ctx)
    out = op.run(ws)[0]
    return [np.array(out.at(i)) for i in range(len(inputs[0]))]


def same_on_both(schema, inputs, layout, kw, gpu, arg_inputs=None):
    for c, g in zip(run_op(schema, inputs, layout, kw, None, arg_inputs),
                    run_op(schema, inputs, layout, kw, gpu, arg_inputs)):
        assert c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_array_equal(g, c)


rng = np.random.default_rng(11)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((13, 17), (9, 6), (20, 11))]
FILTERS = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((3, 3), (5, 2), (1, 4))]


@pytest.mark.parametrize("kw", [{}, {"border": "constant"}, {"border": "wrap"}, {"border": "clamp"},
                                {"border": "reflect_1001"}, {"mode": "valid"}, {"anchor": [0, 1]},
                                {"dtype": dtypes.FLOAT}])
def test_filter_matches_the_cpu(gpu, kw):
    same_on_both(filters.FILTER, [IMAGES, FILTERS], "HWC", kw, gpu)


def test_filter_volumes_and_planar_frames(gpu):
    volumes = [rng.uniform(-5, 5, (4, 5, 6)).astype(np.float32) for _ in range(2)]
    kernels = [rng.uniform(-1, 1, (3, 3, 3)).astype(np.float32), rng.uniform(-1, 1, (1, 2, 3)).astype(np.float32)]
    same_on_both(filters.FILTER, [volumes, kernels], "DHW", {"border": "wrap"}, gpu)
    planar = [rng.integers(-100, 100, (2, 3, 7, 8), dtype=np.int16) for _ in range(2)]
    same_on_both(filters.FILTER, [planar, FILTERS[:2]], "FCHW", {}, gpu)


@pytest.mark.parametrize("kw", [{}, {"window_size": 5}, {"window_size": [3, 7], "smoothing_size": [1, 5]},
                                {"normalized_kernel": True}, {"scale": [0.5, 2.0], "dtype": dtypes.FLOAT}])
def test_laplacian_matches_the_cpu(gpu, kw):
    same_on_both(filters.LAPLACIAN, [IMAGES], "HWC", kw, gpu)


def test_laplacian_of_volumes(gpu):
    volumes = [rng.uniform(0, 1, (6, 5, 7, 2)).astype(np.float32) for _ in range(2)]
    same_on_both(filters.LAPLACIAN, [volumes], "DHWC", {"window_size": [3, 5, 3]}, gpu)


@pytest.mark.parametrize("schema, kw", [
    (filters.MEDIAN_BLUR, {}), (filters.MEDIAN_BLUR, {"window_size": [5, 3]}),
    (filters.ERODE, {}), (filters.DILATE, {"mask_size": [4, 2], "anchor": [0, 1]}),
    (filters.ERODE, {"iterations": 3, "border_mode": "reflect_101"}),
    (filters.DILATE, {"iterations": 2, "border_mode": "wrap"}),
])
def test_rank_filters_match_the_cpu(gpu, schema, kw):
    same_on_both(schema, [IMAGES], "HWC", kw, gpu)
    planar = [np.ascontiguousarray(im.transpose(2, 0, 1)) for im in IMAGES]
    same_on_both(schema, [planar], "CHW", kw, gpu)
