"""multi_paste's GPU path run on the host: csrc/cuda/paste.cu compiled as C++ (tests/_cuda_on_host.py)
behind GpuKernels.multi_paste, driven by the operator's planning; the result must equal the CPU
operator's. The GPU test (tests/test_paste_gpu.py) runs the real kernel."""
import numpy as np
import pytest

from penstock import types as dtypes
from penstock.operators import paste
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host
from test_filter_emulated import run_op

HARNESS = r"""
#include "SOURCE"
#define RUN(I, O)                                                                                          \
  extern "C" void run_multi_paste_##I##_##O(int grid, int block, O* dst, const i64* desc, const i64* bs,  \
                                            int n, const u64* sources, const i64* regions) {             \
    blockDim.x = block;                                                                                   \
    for (int blk = 0; blk < grid; ++blk)                                                                  \
      for (int t = 0; t < block; ++t) {                                                                   \
        blockIdx.x = blk; threadIdx.x = t;                                                                \
        multi_paste_##I##_##O(dst, desc, bs, n, sources, regions);                                        \
      }                                                                                                   \
  }
RUN(u8, u8) RUN(u8, f32) RUN(f32, u8)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("paste_emulated"), "paste.cu", HARNESS,
                                        with_common=True))


rng = np.random.default_rng(8)
IMAGES = [rng.integers(0, 256, (20, 30, 3), dtype=np.uint8) for _ in range(3)]


def _arg(values, dtype):
    return TensorListCPU([np.array(v, dtype) for v in values])


@pytest.mark.parametrize("dtype", [None, dtypes.FLOAT])
def test_in_ids_and_regions(gpu, dtype):
    arg_inputs = {"in_ids": _arg([[2, 0], [1], [0, 1, 2]], np.int32),
                  "out_anchors": _arg([[[0, 0], [5, 7]], [[3, 2]], [[0, 0], [1, 1], [10, 20]]], np.int32),
                  "shapes": _arg([[[10, 10], [12, 20]], [[15, 25]], [[5, 5], [19, 29], [10, 10]]], np.int32),
                  "in_anchors_rel": _arg([[[0.5, 0.5], [0, 0]], [[0.1, 0.1]], [[0, 0], [0, 0], [0.2, 0.3]]],
                                         np.float32)}
    kw = {} if dtype is None else {"dtype": dtype}
    cpu = run_op(paste.MULTI_PASTE, [IMAGES], "HWC", kw, None, arg_inputs)
    emulated = run_op(paste.MULTI_PASTE, [IMAGES], "HWC", kw, gpu, arg_inputs)
    for c, g in zip(cpu, emulated):
        assert c.dtype == g.dtype
        np.testing.assert_array_equal(g, c)


def test_several_inputs_with_conversion(gpu):
    floats = [im.astype(np.float32) * 1.7 - 40 for im in IMAGES]
    kw = {"dtype": dtypes.UINT8}
    cpu = run_op(paste.MULTI_PASTE, [floats, floats[::-1]], "HWC", kw, None)
    emulated = run_op(paste.MULTI_PASTE, [floats, floats[::-1]], "HWC", kw, gpu)
    for c, g in zip(cpu, emulated):
        np.testing.assert_array_equal(g, c)
