// Occlusion kernels (occlusion.cpp): erase (boxes filled) and grid_mask.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void erase(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
           I64Array dst_offsets, I64Array boxes, I64Array box_offsets, ArrayOf<float> fill);
// erase's boxes for samples of `sample_shapes` [N, nd]: sample i's regions take k = |axes| values
// each from anchors[anchor_starts[i]...] (anchor_counts[i] of them; none: zeros) and shapes likewise,
// scaled by the sample's extents along `axes` where normalized, the anchor moved back by half the
// shape where centred. Returns boxes [R, 2 nd] (starts, then ends, over every dim: the whole extent on
// the others; both rounded down, as DALI does) and where each sample's boxes begin [N + 1]. Starts and
// counts of one entry stand for every sample. Runs with the GIL held: a Python loop over the samples
// gave it away twice a sample.
ArrayTuple erase_regions(I64Array sample_shapes, I64Array axes, ArrayOf<double> anchors, I64Array anchor_starts,
                         I64Array anchor_counts, ArrayOf<double> shapes, I64Array shape_starts, I64Array shape_counts,
                         bool normalized_anchor, bool normalized_shape, bool centered_anchor);
void grid_mask(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
               I64Array dst_offsets, ArrayOf<float> params);

}  // namespace penstock
