// Separable resampling (resize.cpp): resize of whole batches, and the taps of many axes for
// kernels that resample elsewhere (the GPU).
#pragma once
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void resize(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type, Array dst,
            I64Array dst_shapes, I64Array dst_offsets, int dst_type, int spatial, ArrayOf<double> roi,
            ArrayOf<int32_t> min_filter, ArrayOf<int32_t> mag_filter, bool antialias);

// Per axis the tap count, where its starts and weights begin in the packed arrays, the lowest
// first / highest last source index it reads; then the packed starts (int32) and weights (float).
using ResizeTaps = std::tuple<I64Array, I64Array, I64Array, I64Array, I64Array, ArrayOf<int32_t>, ArrayOf<float>>;
ResizeTaps resize_taps(ThreadPool& pool, I64Array in_sizes, I64Array out_sizes, ArrayOf<double> roi_start,
                       ArrayOf<double> roi_end, ArrayOf<int32_t> min_filter, ArrayOf<int32_t> mag_filter,
                       bool antialias);

// The resize operators' output sizes (DALI's rules) for source regions [N, 2S] (starts, then ends):
// `requested` holds per spatial axis its size argument ([N] values, or [1] for every sample; 0 unset,
// negative flips), `shorter` and `longer` the side lengths ([N] or [1]; 0 unset), `mode` 0 default,
// 1 stretch, 2 not_larger, 3 not_smaller, `max_size` [S] (0: no cap; empty: none). Returns the float
// sizes [N, S], the whole sizes [N, S] (ties rounded up, at least 1 where the float size is
// positive) and the source ROIs [N, 2S], flipped where asked and, with `subpixel_scale`, widened or
// narrowed about their centres to the whole size's exact scale. Runs with the GIL held: numpy on the
// [N, S] tables gave it away about fifty times a batch of 256 with resize_shorter.
ArrayTuple resize_output_sizes(ArrayOf<double> regions, const std::vector<ArrayOf<double>>& requested,
                               ArrayOf<double> shorter, ArrayOf<double> longer, int64_t mode, ArrayOf<double> max_size,
                               bool subpixel_scale);

// What a GPU resize plans on the host per axis (its kernels compute the taps themselves), for samples
// of shapes [N, nd] (..., H, W, C) resized from their source regions roi [N, 4] (y0, x0, y1, x1) with
// filters [N, 2] (y, x): per axis, y then x of each sample, the taps kernel's row [2N, 8] (input size,
// output size, min filter, mag filter, tap count, where its starts and weights begin in the packed
// arrays, 0), the lowest and highest+1 source index it may read [2N], its source range [2N, 2] (start,
// end); the taps kernel's block starts [2N + 1] (`per_block` outputs a block); and [total starts,
// total weights, most taps of an axis, the taps kernel's blocks]. Runs with the GIL held:
// microseconds of planning per batch, where the same steps in numpy gave the GIL away a dozen times.
ArrayTuple resize_axis_spans(I64Array src_shapes, I64Array dst_shapes, ArrayOf<double> roi, ArrayOf<int32_t> min_filter,
                             ArrayOf<int32_t> mag_filter, bool antialias, int64_t per_block);

// The two passes of a GPU resize planned from resize_axis_spans' axes [N * 2, 8] and spans (lo, hi:
// [N * 2], y then x per sample) for samples of shapes [N, nd] (..., H, W, C; leading dimensions are
// frames): one descriptor per frame [F, 16], and the frames cut into runs whose vertical-pass
// intermediates (floats) stay within `tmp_budget` elements each (beyond one frame). Returns the
// descriptors, both passes' block starts per run back to back (a run's frames + 1 entries each,
// `per_block` elements a block), the runs [R, 5] (first frame, end frame, vertical grid, horizontal
// grid, where its block starts begin) and [the intermediate's elements]. Runs with the GIL held:
// microseconds of planning per batch.
ArrayTuple resize_pass_plan(I64Array src_shapes, I64Array dst_shapes, I64Array src_offsets, I64Array dst_offsets,
                            I64Array axes, I64Array lo, I64Array hi, int64_t tmp_budget, int64_t per_block);

// The rows of a GPU resize's horizontal pass that stores crop_mirror_normalize's output (resize.cu's
// resize_h_*_cmn_*) for images resized to `mid_shapes` [N, 3] (H, W, C): per sample its window row
// [N, 8] (output offset, the window's anchor [N, 2] and size (windows [N, 3]: H, W, C) in the resized
// image, mirror, the output's channels and where they go) and its normalization row (shift, the
// `out_channels` fill values, the means [N, C], scale / std [N, C] as floats). No rows (an empty
// tuple) when a window reaches outside its resized image: the operators then run one after the
// other. Runs with the GIL held (the same steps in numpy gave it away several times a batch).
ArrayTuple resize_normalize_plan(I64Array mid_shapes, I64Array anchors, I64Array windows, ArrayOf<uint8_t> mirror,
                                 I64Array out_offsets, int64_t channel_out_dim, ArrayOf<float> fill,
                                 ArrayOf<float> mean, ArrayOf<float> std, double scale, double shift);

}  // namespace penstock
