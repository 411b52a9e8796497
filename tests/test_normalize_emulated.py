"""normalize's GPU path run on the host: csrc/cuda/normalize.cu compiled as C++
(tests/_cuda_on_host.py) behind GpuKernels.normalize, with the engine's reduction (the same
contract as reductions.cu) for the statistics. Results must equal the CPU operator's; the GPU test
(tests/test_gpu_operators.py) runs the real kernels."""
import types

import numpy as np
import pytest

from penstock import _engine
from penstock import types as dtypes
from penstock._operator import Workspace
from penstock._registry import kernel_for, resolve_defaults, split_args
from penstock.operators import normalize
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host

HARNESS = r"""
struct f16 { u16 bits; };
static inline float half_to_float(f16) { return 0.f; }  // float16 inputs are not emulated here
static Dim blockIdx, threadIdx, blockDim;
#include "SOURCE"
#define RUN(T)                                                                                          \
  extern "C" void run_normalize_##T(int grid, int block, const T* src, float* dst, const i64* desc,     \
                                    const i64* bs, int n, int nd, const double* mean, const double* sd, \
                                    double scale, double shift) {                                      \
    blockDim.x = block;                                                                                \
    for (int b = 0; b < grid; ++b)                                                                     \
      for (int t = 0; t < block; ++t) {                                                                \
        blockIdx.x = b; threadIdx.x = t;                                                               \
        normalize_##T(src, dst, desc, bs, n, nd, mean, sd, scale, shift);                              \
      }                                                                                                \
  }
RUN(u8) RUN(f32)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    ctx = HostContext(compile_for_host(tmp_path_factory.mktemp("normalize_emulated"), "normalize.cu", HARNESS))
    # the reduction and cast kernels are tested against the CPU on the GPU; the engine's stand in
    ctx.kernels.reduce = _engine.reduce
    ctx.kernels.cast = _engine.cast
    return ctx


def _run(images, kw, gpu_ctx, arg_inputs=None):
    scalars, tensors = split_args(normalize.NORMALIZE, dict(kw))
    args = resolve_defaults(normalize.NORMALIZE, scalars, tensors, "normalize")
    node = types.SimpleNamespace(args=args, name="normalize", schema=normalize.NORMALIZE,
                                 device="gpu" if gpu_ctx else "cpu", resolved_seed=0)
    op = kernel_for(normalize.NORMALIZE, node.device)(node, None)
    ws = Workspace(inputs=[TensorListCPU(images, "HWC")], arg_inputs=arg_inputs or {}, batch_size=len(images),
                   iteration=0, epoch=0, pool=_engine.ThreadPool(2), op=op, gpu=gpu_ctx)
    out = op.run(ws)[0]
    return [np.array(out.at(i)) for i in range(len(images))]


rng = np.random.default_rng(7)
RAGGED = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((37, 53), (64, 48), (21, 90), (50, 50))]
SAME = [im[:21, :37] for im in RAGGED]


@pytest.mark.parametrize("kw", [
    {}, {"axes": (0, 1)}, {"axis_names": "HW", "scale": 64.0, "shift": 128.0, "dtype": dtypes.UINT8},
    {"axes": (0, 1), "ddof": 1, "epsilon": 0.5}, {"batch": True, "axes": (0, 1)}, {"batch": True},
    {"mean": 100.0}, {"mean": 100.0, "stddev": 40.0, "axes": (0, 1)}, {"stddev": 30.0, "axes": (0,)},
])
@pytest.mark.parametrize("as_float", [False, True])
def test_gpu_path_equals_the_cpu(gpu, kw, as_float):
    images = [im.astype(np.float32) / 255 for im in SAME] if as_float else SAME
    for c, g in zip(_run(images, kw, None), _run(images, kw, gpu)):
        assert c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_allclose(g.astype(np.float64), c, rtol=1e-6, atol=1e-6)


def test_gpu_path_with_per_sample_statistics(gpu):
    means = TensorListCPU([np.array([10.0 * k, 20.0, 30.0], np.float32) for k in range(len(RAGGED))])
    stds = TensorListCPU([np.array([2.0 + k], np.float32) for k in range(len(RAGGED))])
    for kw, given in (({}, {"mean": means, "stddev": stds}), ({"axes": (0, 1)}, {"mean": means})):
        for c, g in zip(_run(RAGGED, kw, None, given), _run(RAGGED, kw, gpu, given)):
            np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)
