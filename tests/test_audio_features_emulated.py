"""The GPU path of the speech feature operators run on the host: csrc/cuda/audio_features.cu
compiled as C++ (tests/_cuda_on_host.py) behind _cuda/kernels/audio_features.py, numpy's FFT
standing in for CuPy's (cuFFT) and the engine's reduction for reductions.cu. Results must equal the CPU operators' within float rounding
(the frames are transformed in float32 here, in double on the CPU). The GPU tests
(tests/test_audio_features_gpu.py) run the real kernels and cuFFT."""
import types

import numpy as np
import pytest

from penstock import _engine
from penstock._operator import Workspace
from penstock._registry import kernel_for, resolve_defaults, split_args
from penstock.operators import audio_features
from penstock.tensors import TensorListCPU

from _audio_data import signal
from _cuda_on_host import HostContext, compile_for_host

HARNESS = r"""
static Dim blockIdx, threadIdx, blockDim;
static float __fsub_rn(float a, float b) { return a - b; }
static float __fmul_rn(float a, float b) { return a * b; }
#include "SOURCE"
#define LOOP(CALL)                                                       \
  blockDim.x = block;                                                    \
  for (int b = 0; b < grid; ++b)                                         \
    for (int t = 0; t < block; ++t) { blockIdx.x = b; threadIdx.x = t; CALL; }
extern "C" void run_audio_frames(int grid, int block, const float* src, float* rows, const i64* desc, const i64* bs,
                                 int n, const double* window, int wlen, int nfft, int step, int centered, int reflect) {
  LOOP(audio_frames(src, rows, desc, bs, n, window, wlen, nfft, step, centered, reflect))
}
extern "C" void run_audio_power(int grid, int block, const float* bins, float* dst, const i64* desc, const i64* bs,
                                int n, int nbins, int power, int freq_major) {
  LOOP(audio_power(bins, dst, desc, bs, n, nbins, power, freq_major))
}
extern "C" void run_audio_lines(int grid, int block, const float* src, float* rows, const i64* desc, const i64* bs,
                                int n, int nfft) {
  LOOP(audio_lines(src, rows, desc, bs, n, nfft))
}
extern "C" void run_audio_line_power(int grid, int block, const float* bins, float* dst, const i64* desc,
                                     const i64* bs, int n, int nbins, int power) {
  LOOP(audio_line_power(bins, dst, desc, bs, n, nbins, power))
}
extern "C" void run_audio_matrix(int grid, int block, const float* src, float* dst, const i64* desc, const i64* bs,
                                 int n, const double* matrices) {
  LOOP(audio_matrix(src, dst, desc, bs, n, matrices))
}
extern "C" void run_audio_decibels(int grid, int block, const float* src, float* dst, const float* refs,
                                   const i64* desc, const i64* bs, int n, double multiplier, double floor_ratio) {
  LOOP(audio_decibels(src, dst, refs, desc, bs, n, multiplier, floor_ratio))
}
#define RUN_PREEMPHASIS(T)                                                                                  \
  extern "C" void run_audio_preemphasis_##T(int grid, int block, const T* src, float* dst, const i64* desc,  \
                                            const i64* bs, int n, const float* coeffs, int border) {        \
    LOOP(audio_preemphasis_##T(src, dst, desc, bs, n, coeffs, border))                                      \
  }
RUN_PREEMPHASIS(i16) RUN_PREEMPHASIS(i32) RUN_PREEMPHASIS(f32)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    ctx = HostContext(compile_for_host(tmp_path_factory.mktemp("audio_emulated"), "audio_features.cu", HARNESS))
    ctx.kernels.reduce = _engine.reduce  # reduce.cu is tested against the CPU on the GPU
    return ctx


def _run(schema, samples, kw, gpu_ctx, layout="", arg_inputs=None):
    scalars, tensors = split_args(schema, dict(kw))
    args = resolve_defaults(schema, scalars, tensors, schema.fn_name)
    node = types.SimpleNamespace(args=args, name=schema.fn_name, schema=schema,
                                 device="gpu" if gpu_ctx else "cpu", resolved_seed=0, arg_inputs={})
    op = kernel_for(schema, node.device)(node, None)
    op.setup()
    ws = Workspace(inputs=[TensorListCPU(samples, layout)], arg_inputs=arg_inputs or {}, batch_size=len(samples),
                   iteration=0, epoch=0, pool=_engine.ThreadPool(2), op=op, gpu=gpu_ctx)
    return [[np.array(out.at(i)) for i in range(len(samples))] for out in op.run(ws)]


def _same(schema, samples, kw, gpu, layout="", rtol=1e-5, arg_inputs=None):
    for cpu_out, gpu_out in zip(_run(schema, samples, kw, None, layout, arg_inputs),
                                _run(schema, samples, kw, gpu, layout, arg_inputs)):
        for c, g in zip(cpu_out, gpu_out):
            assert c.shape == g.shape and c.dtype == g.dtype
            np.testing.assert_allclose(g, c, rtol=rtol, atol=rtol * max(float(np.abs(c).max(initial=0)), 1e-30))


SIGNALS = [signal(kind, n, 16000, 1, k)[:, 0] for k, (kind, n) in
           enumerate([("speechlike", 4000), ("chirp", 731), ("noise", 97), ("tone", 2048)])]


@pytest.mark.parametrize("kw", [
    {}, {"nfft": 512, "window_length": 400, "window_step": 160}, {"nfft": 100, "window_length": 81, "window_step": 33},
    {"power": 1, "layout": "tf"}, {"reflect_padding": False}, {"window_length": 64, "window_step": 16},
    {"center_windows": False, "window_length": 64, "window_step": 16},
    {"window_length": 8, "window_step": 3, "window_fn": [0.1, 0.5, 1, 2, 2, 1, 0.5, 0.1]},
])
def test_spectrogram(gpu, kw):
    _same(audio_features.SPECTROGRAM, SIGNALS, kw, gpu, rtol=2e-5)


@pytest.mark.parametrize("kw", [{}, {"nfft": 16}, {"nfft": 100}, {"axis": 0}, {"axis": 1, "power": 1}])
def test_power_spectrum(gpu, kw):
    rng = np.random.default_rng(1)
    data = [rng.standard_normal((5, 33, 2)).astype(np.float32), rng.standard_normal((3, 20, 2)).astype(np.float32)]
    _same(audio_features.POWER_SPECTRUM, data, kw, gpu, rtol=2e-5)


@pytest.mark.parametrize("schema, kw", [
    (audio_features.MEL_FILTER_BANK, {"nfilter": 40, "sample_rate": 16000.0}),
    (audio_features.MEL_FILTER_BANK, {"nfilter": 20, "sample_rate": 16000.0, "mel_formula": "htk", "normalize": False}),
    (audio_features.MFCC, {}), (audio_features.MFCC, {"n_mfcc": 13, "normalize": True, "lifter": 22.0}),
    (audio_features.MFCC, {"axis": 1, "n_mfcc": 4, "dct_type": 3}),
])
def test_matrices(gpu, schema, kw):
    rng = np.random.default_rng(2)
    data = [np.abs(rng.standard_normal((257, n))).astype(np.float32) for n in (9, 1, 4)]
    _same(schema, data, kw, gpu, layout="ft")


@pytest.mark.parametrize("kw", [{}, {"multiplier": 20.0, "cutoff_db": -60.0}, {"reference": 1e-3},
                                {"reference": -1.0}])
def test_to_decibels(gpu, kw):
    rng = np.random.default_rng(3)
    data = [np.abs(rng.standard_normal((6, 5))).astype(np.float32), np.zeros((2, 3), np.float32),
            np.zeros((0, 3), np.float32)]
    _same(audio_features.TO_DECIBELS, data, kw, gpu)


@pytest.mark.parametrize("border", ["zero", "clamp", "reflect"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.int32])
def test_preemphasis(gpu, border, dtype):
    data = [(x * 20000).astype(dtype) if dtype != np.float32 else x for x in SIGNALS]
    coeffs = TensorListCPU([np.array(c, np.float32) for c in (0.97, 0.5, 0.0, 1.0)])
    _same(audio_features.PREEMPHASIS, data, {"border": border}, gpu, rtol=1e-6,
          arg_inputs={"preemph_coeff": coeffs})


def test_preemphasis_to_integers_is_not_on_the_gpu(gpu):
    from penstock import types as dtypes
    with pytest.raises(NotImplementedError, match="FLOAT output"):
        _run(audio_features.PREEMPHASIS, SIGNALS, {"dtype": dtypes.INT16}, gpu)


def test_batches_of_about_the_same_size_share_one_transform_plan(gpu):
    # the rows of a batched transform are rounded up (by at most an eighth) so CuPy's plan cache
    # serves batches whose frame counts differ a little
    planned = {count: gpu.kernels._rows(count, 512)[1] for count in (1000, 1010, 1023, 2600, 2650, 7)}
    assert planned[1000] == planned[1010] == planned[1023] and planned[2600] == planned[2650]
    assert all(count <= rows <= max(64, count * 9 // 8) for count, rows in planned.items())
    assert gpu.kernels._rows(1000, 512)[0].size == planned[1000] * 512
