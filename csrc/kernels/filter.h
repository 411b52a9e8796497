// Filters (filter.cpp): correlation with a per-sample filter, the Laplacian, and the rank filters
// (median, erosion, dilation).
#pragma once
#include "engine/kernel.h"

namespace penstock {

void filter(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
            I64Array out_shapes, I64Array dst_offsets, int dst_type, ArrayOf<float> filters, I64Array filter_shapes,
            I64Array filter_offsets, I64Array anchors, int border, ArrayOf<double> fill);
void laplacian(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
               I64Array dst_offsets, int dst_type, ArrayOf<float> windows, I64Array window_sizes,
               I64Array window_offsets, ArrayOf<float> scales);
void rank_filter(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_offsets,
                 int type, int rank, I64Array windows, I64Array anchors, int border, int iterations);

}  // namespace penstock
