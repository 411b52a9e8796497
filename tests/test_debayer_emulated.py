"""debayer's GPU path run on the host: csrc/cuda/debayer.cu compiled as C++ (tests/_cuda_on_host.py)
behind GpuKernels.debayer, driven by the operator; equal to the CPU operator. The GPU test
(tests/test_debayer_gpu.py) runs the real kernel."""
import numpy as np
import pytest

from penstock.operators import debayer
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host
from test_filter_emulated import run_op

HARNESS = r"""
#include "SOURCE"
#define RUN(T)                                                                                                \
  extern "C" void run_debayer_##T(int grid, int block, const T* s, T* d, const i64* desc, const i64* bs,     \
                                  int n, int grey) {                                                         \
    blockDim.x = block;                                                                                      \
    for (int blk = 0; blk < grid; ++blk)                                                                     \
      for (int t = 0; t < block; ++t) { blockIdx.x = blk; threadIdx.x = t; debayer_##T(s, d, desc, bs, n, grey); } \
  }
RUN(u8) RUN(u16)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("debayer_emulated"), "debayer.cu", HARNESS,
                                        with_common=True))


rng = np.random.default_rng(16)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("algorithm", ["bilinear_ocv", "gray_ocv"])
def test_gpu_path_equals_the_cpu(gpu, dtype, algorithm):
    seqs = [rng.integers(0, np.iinfo(dtype).max, (f, h, w)).astype(dtype) for f, h, w in ((2, 10, 14), (1, 20, 6))]
    arg_inputs = {"blue_position": TensorListCPU([np.array([0, 1], np.int32), np.array([1, 1], np.int32)])}
    kw = {"algorithm": algorithm}
    cpu = run_op(debayer.DEBAYER, [seqs], "FHW", kw, None, arg_inputs)
    emulated = run_op(debayer.DEBAYER, [seqs], "FHW", kw, gpu, arg_inputs)
    for c, g in zip(cpu, emulated):
        np.testing.assert_array_equal(g, c)
