"""resize's GPU passes run on the host: csrc/cuda/resize.cu compiled as C++ with common.cuh
(tests/_cuda_on_host.py) behind GpuKernels.resize, its taps by its own resize_taps kernel. Each
thread of the two passes takes several elements (ITEMS), so outputs whose sizes are not multiples
of a block's elements check the loop's ends; a small intermediate budget makes several runs.
Results must equal the CPU kernel's within 1 (the GPU test runs the real kernels)."""
import numpy as np
import pytest

from penstock import _engine
from penstock._cuda.kernels import resize as resize_kernels
from penstock._cuda.kernels import BLOCK, ITEMS

from _cuda_on_host import HostContext, compile_for_host

HARNESS = r"""
#include "SOURCE"
#define RUN(NAME, SIGNATURE, CALL)                                                  \
  extern "C" void run_##NAME(int grid, int block, SIGNATURE) {                      \
    blockDim.x = block;                                                             \
    for (int b = 0; b < grid; ++b)                                                  \
      for (int t = 0; t < block; ++t) { blockIdx.x = b; threadIdx.x = t; NAME CALL; } \
  }
#define COMMA ,
RUN(resize_taps, const i64* axes COMMA const i64* bs COMMA int n COMMA const double* rois COMMA int aa COMMA
    i32* starts COMMA i32* counts COMMA float* weights, (axes, bs, n, rois, aa, starts, counts, weights))
RUN(resize_v_u8, const u8* src COMMA float* tmp COMMA const i64* desc COMMA const i64* bs COMMA int frames COMMA
    const i32* starts COMMA const i32* counts COMMA const float* weights,
    (src, tmp, desc, bs, frames, starts, counts, weights))
RUN(resize_h_u8, const float* tmp COMMA u8* dst COMMA const i64* desc COMMA const i64* bs COMMA int frames COMMA
    const i32* starts COMMA const i32* counts COMMA const float* weights,
    (tmp, dst, desc, bs, frames, starts, counts, weights))
#define RUN_NORMALIZED(M, O)                                                                            \
  RUN(resize_h_##M##_cmn_##O, const float* tmp COMMA O* dst COMMA const i64* desc COMMA const i64* bs COMMA \
      int frames COMMA const i32* starts COMMA const i32* counts COMMA const float* weights COMMA           \
      const i64* windows COMMA const float* norm,                                                         \
      (tmp, dst, desc, bs, frames, starts, counts, weights, windows, norm))
RUN_NORMALIZED(u8, f32)
RUN_NORMALIZED(u8, u8)
RUN_NORMALIZED(u8, i8)
"""


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("resize"), "resize.cu", HARNESS, with_common=True))


def _resized_both_ways(ctx, samples, dst_shapes, filter_type=1):
    """``samples`` (HWC images or FHWC sequences) resized to ``dst_shapes`` by the CPU kernel and by
    the GPU kernels on the host, as int arrays; also the ROIs and filters given (whole images)."""
    src_shapes = np.array([a.shape for a in samples], np.int64)
    dst_shapes = np.array(dst_shapes, np.int64)
    src_offsets, dst_offsets = (np.concatenate([[0], np.cumsum(sh.prod(axis=1))[:-1]]).astype(np.int64)
                                for sh in (src_shapes, dst_shapes))
    src = np.concatenate([a.reshape(-1) for a in samples])
    roi = np.column_stack([np.zeros((len(samples), 2)), src_shapes[:, -3:-1]]).astype(np.float64)
    filters = np.full((len(samples), 2), filter_type, np.int32)
    outs = []
    for kernels in (_engine, ctx.kernels):
        dst = np.zeros(int(dst_shapes.prod(axis=1).sum()), np.uint8)
        kernels.resize(_engine.ThreadPool(1), src, src_shapes, src_offsets, 0, dst, dst_shapes, dst_offsets, 0, 2,
                       roi, filters, filters, True)
        outs.append(dst.astype(int))
    return outs, roi, filters


@pytest.mark.parametrize("tmp_elements", [1 << 22, 3000])  # one run; a run per image
@pytest.mark.parametrize("filter_type", [1, 2])  # linear, cubic
def test_resize_with_several_elements_per_thread_matches_the_cpu_kernel(ctx, monkeypatch, tmp_elements, filter_type):
    monkeypatch.setattr(resize_kernels, "_RESIZE_TMP_ELEMENTS", tmp_elements)
    rng = np.random.default_rng(21)
    images = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in [(61, 47), (30, 90), (17, 13)]]
    dst_shapes = [[37, 29, 3], [45, 61, 3], [33, 19, 3]]
    assert (np.prod(dst_shapes, axis=1) % (BLOCK * ITEMS) != 0).all()
    (cpu, gpu), _, _ = _resized_both_ways(ctx, images, dst_shapes, filter_type)
    assert np.abs(gpu - cpu).max() <= 1
    assert cpu.std() > 10  # real images, not a constant


@pytest.mark.parametrize("tmp_elements", [1 << 22, 2000])  # one run; runs that split a sequence's frames
def test_sequences_resize_frame_by_frame_as_the_cpu_kernel(ctx, monkeypatch, tmp_elements):
    """Each frame of a sequence (FHWC) has its own descriptor and its sample's taps; a sequence of
    no frames is skipped."""
    monkeypatch.setattr(resize_kernels, "_RESIZE_TMP_ELEMENTS", tmp_elements)
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 256, shape, np.uint8) for shape in [(3, 40, 31, 3), (0, 9, 9, 3), (2, 23, 57, 3)]]
    (cpu, gpu), _, _ = _resized_both_ways(ctx, seqs, [[3, 29, 44, 3], [0, 5, 5, 3], [2, 31, 20, 3]])
    assert np.abs(gpu - cpu).max() <= 1
    assert cpu.std() > 10


def test_filters_wider_than_the_taps_kernel_takes_are_planned_on_the_host(ctx):
    """An extreme downscale (1300 rows to 5: 522 taps a row with antialiasing) beside an ordinary one:
    the host plans every axis's taps, uploaded with the passes' descriptors."""
    rng = np.random.default_rng(8)
    images = [rng.integers(0, 256, shape, np.uint8) for shape in [(1300, 20, 3), (30, 41, 3)]]
    dst_shapes = [[5, 20, 3], [17, 60, 3]]
    (cpu, gpu), roi, filters = _resized_both_ways(ctx, images, dst_shapes)
    widest = _engine.resize_axis_spans(np.array([im.shape for im in images]), np.array(dst_shapes), roi, filters,
                                       filters, True, BLOCK)[5][2]
    assert widest > 128
    assert np.abs(gpu - cpu).max() <= 1
    assert cpu.std() > 5


def reference_axis_spans(in_sizes, out_sizes, roi_start, roi_end, min_filter, mag_filter, antialias):
    """What the GPU resize plans per axis, written out with numpy."""
    step = (roi_end - roi_start) / np.maximum(out_sizes, 1)
    scale = np.abs(step)
    kind = np.where(scale > 1, min_filter, mag_filter).astype(np.int64)
    stretch = np.where((scale > 1) & (antialias | (kind == 4) | (kind == 5)), scale, 1.0)
    radius = np.array([0.0, 1.0, 2.0, 3.0, 1.0, 1.5])[kind] * stretch
    taps = np.maximum(np.where(kind == 0, 1, np.minimum(in_sizes, np.floor(2 * radius).astype(np.int64) + 2)), 1)
    start_at = np.concatenate([[0], np.cumsum(out_sizes)[:-1]]).astype(np.int64)
    weight_at = np.concatenate([[0], np.cumsum(out_sizes * taps)[:-1]]).astype(np.int64)
    c = roi_start[:, None] + (np.stack([np.zeros_like(out_sizes), out_sizes - 1], 1) + 0.5) * step[:, None]
    nearest = kind == 0
    first = np.where(nearest, np.floor(c.min(1) + 1e-7), np.ceil(c.min(1) - 0.5 - radius))
    last = np.where(nearest, np.floor(c.max(1) + 1e-7), np.floor(c.max(1) - 0.5 + radius))
    top = np.maximum(in_sizes - 1, 0)
    lo = np.clip(first, 0, top).astype(np.int64)
    hi = np.where(out_sizes > 0, np.clip(last, 0, top).astype(np.int64) + 1, lo)
    totals = [out_sizes.sum(), (out_sizes * taps).sum(), taps.max(initial=1)]
    return taps, start_at, weight_at, lo, hi, np.array(totals, np.int64)


@pytest.mark.parametrize("antialias", [False, True])
def test_axis_spans_match_the_numpy_plan(antialias):
    # every filter, up- and downscaling, flipped and partial ROIs, empty outputs; sequences (FHWC)
    rng = np.random.default_rng(5)
    for trial in range(50):
        n, frames = int(rng.integers(1, 300)), trial % 2
        in_hw, out_hw = rng.integers(1, 4000, (n, 2)), rng.integers(0, 800, (n, 2))
        start = rng.uniform(-50, 300, (n, 2))
        end = start + rng.uniform(-100, 4000, (n, 2))
        filters = rng.integers(0, 6, (2, n, 2)).astype(np.int32)
        lead = [np.full((n, 1), 3)] * frames
        src_shapes = np.hstack(lead + [in_hw, np.full((n, 1), 3)]).astype(np.int64)
        dst_shapes = np.hstack(lead + [out_hw, np.full((n, 1), 3)]).astype(np.int64)
        taps, start_at, weight_at, lo, hi, totals = reference_axis_spans(
            in_hw.reshape(-1), out_hw.reshape(-1), start.reshape(-1), end.reshape(-1), filters[0].reshape(-1),
            filters[1].reshape(-1), antialias)
        axes, got_lo, got_hi, rois, blocks, got_totals = _engine.resize_axis_spans(
            src_shapes, dst_shapes, np.hstack([start, end]), filters[0], filters[1], antialias, BLOCK)
        np.testing.assert_array_equal(axes, np.column_stack([in_hw.reshape(-1), out_hw.reshape(-1),
                                                             filters[0].reshape(-1), filters[1].reshape(-1), taps,
                                                             start_at, weight_at, np.zeros(2 * n, np.int64)]))
        np.testing.assert_array_equal(got_lo, lo)
        np.testing.assert_array_equal(got_hi, hi)
        np.testing.assert_array_equal(rois, np.column_stack([start.reshape(-1), end.reshape(-1)]))
        per_block = -(-out_hw.reshape(-1) // BLOCK)
        np.testing.assert_array_equal(blocks, np.concatenate([[0], np.cumsum(per_block)]))
        np.testing.assert_array_equal(got_totals, np.append(totals, per_block.sum()))


def test_axis_spans_refuse_arguments_that_disagree():
    shapes = np.array([[4, 4, 3]], np.int64)
    with pytest.raises(ValueError, match="roi must be"):
        _engine.resize_axis_spans(shapes, shapes, np.zeros(2), np.ones((1, 2), np.int32), np.ones((1, 2), np.int32),
                                  True, BLOCK)
    with pytest.raises(ValueError, match="shapes must be"):
        _engine.resize_axis_spans(shapes, shapes[:, :2], np.zeros(4), np.ones(2, np.int32), np.ones(2, np.int32),
                                  True, BLOCK)