"""The CUDA point-operation kernels (csrc/cuda/point_ops.cu) run on the host: the .cu file is
compiled as C++ with the CUDA names it uses defined here (a launch runs its blocks one after the
other, the threads of a block as host threads meeting at a barrier for __syncthreads, shared
memory as statics), driven by the real ``GpuKernels`` methods and operator code with numpy in
place of CuPy, and the results must equal the CPU operators' byte for byte (contrast: within 1,
see tests/test_gpu_auto_aug.py). The GPU test compares the real launches with the CPU."""
import types

import numpy as np
import pytest

from penstock import _engine
from penstock._operator import Workspace
from penstock._registry import kernel_for
from penstock.operators import point_ops
from penstock.tensors import TensorListCPU

from _cuda_on_host import BLOCK_THREADS, HostContext, compile_for_host

HARNESS = BLOCK_THREADS + r"""
static u64 atomicAdd(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static int atomicMin(int* p, int v) {
  int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
static int atomicMax(int* p, int v) {
  int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
static double __dadd_rn(double a, double b) { return a + b; }
static double __dmul_rn(double a, double b) { return a * b; }
static float __fadd_rn(float a, float b) { return a + b; }
static float __fmul_rn(float a, float b) { return a * b; }
#include "SOURCE"
extern "C" {
void run_channel_histograms(int g, int b, const u8* src, u64* hist, const i64* desc, const i64* bs, int n, int max_c) {
  launch(g, b, true, [&] { channel_histograms(src, hist, desc, bs, n, max_c); });
}
void run_histogram_luts(int g, int b, const u64* hist, u8* luts, const double* params, const double* weights,
                        int max_c, int kind) {
  launch(g, b, true, [&] { histogram_luts(hist, luts, params, weights, max_c, kind); });
}
void run_apply_lut(int g, int b, const u8* src, u8* dst, const i64* desc, const i64* bs, int n, const u8* luts,
                   int max_c) {
  launch(g, b, false, [&] { apply_lut(src, dst, desc, bs, n, luts, max_c); });
}
void run_sharpness(int g, int b, const u8* src, u8* dst, const i64* desc, const i64* bs, int n, const float* f) {
  launch(g, b, false, [&] { sharpness(src, dst, desc, bs, n, f); });
}
}
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("point_ops_emulated"), "point_ops.cu", HARNESS))


def _run(schema, images, layout, params, gpu_ctx):
    """The operator's output for one batch, run on the CPU (gpu_ctx None) or the emulated GPU."""
    node = types.SimpleNamespace(args={"param": 0.0}, name="op", schema=schema, device="gpu" if gpu_ctx else "cpu",
                                 resolved_seed=0)
    op = kernel_for(schema, node.device)(node, None)
    arg_inputs = {} if params is None else {"param": TensorListCPU([np.float32(p) for p in params])}
    ws = Workspace(inputs=[TensorListCPU(images, layout)], arg_inputs=arg_inputs, batch_size=len(images),
                   iteration=0, epoch=0, pool=_engine.ThreadPool(2), op=op, gpu=gpu_ctx)
    out = op.run(ws)[0]
    return [np.array(out.at(i)) for i in range(len(images))]


rng = np.random.default_rng(5)


def _low(shape):
    return rng.integers(40, 180, shape).astype(np.uint8)


BATCHES = [
    ([_low((37, 53, 3)), np.full((9, 11, 3), 77, np.uint8), rng.integers(0, 256, (97, 83, 3), np.uint8),
      _low((2, 2, 3))], "HWC"),
    ([_low((21, 17)), np.full((5, 5), 200, np.uint8)], "HW"),
    ([_low((13, 7, 3)), _low((11, 9, 1)), _low((19, 5, 4))], "HWC"),
    ([_low((15, 9, 10)), rng.integers(0, 256, (33, 40, 10), np.uint8)], "HWC"),  # global-memory histograms
]
PARAMS = {"Posterize": [8, 2.4, 1, 0], "Solarize": [0, 128.5, 200, 256], "SolarizeAdd": [0, 50.5, 110, 200],
          "Contrast": [0.1, 1.0, 1.9, 1.37], "Sharpness": [0.1, 1.0, 1.9, 1.37]}
SCHEMAS = [point_ops.EQUALIZE, point_ops.AUTO_CONTRAST, point_ops.INVERT, point_ops.POSTERIZE, point_ops.SOLARIZE,
           point_ops.SOLARIZE_ADD, point_ops.CONTRAST, point_ops.SHARPNESS]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.name)
def test_emulated_kernels_match_the_cpu_operators(gpu, schema):
    key = schema.name.split(".")[-1]
    batches = BATCHES[:1] if key == "Sharpness" else BATCHES
    for images, layout in batches:
        params = PARAMS[key][:len(images)] if key in PARAMS else None
        cpu = _run(schema, images, layout, params, None)
        emulated = _run(schema, images, layout, params, gpu)
        for img, c, g in zip(images, cpu, emulated):
            assert c.shape == g.shape == img.shape
            diff = np.abs(c.astype(int) - g.astype(int)).max()
            assert diff <= (1 if key == "Contrast" else 0), (schema.name, img.shape, diff)
