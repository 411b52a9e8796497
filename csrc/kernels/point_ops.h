// Point operations on uint8 images (point_ops.cpp): channel histograms, lookup tables, sharpness.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void channel_histograms(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, int64_t max_channels,
                        I64Array hist);
void apply_lut(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, ArrayOf<uint8_t> luts, Array dst,
               I64Array dst_offsets);
void sharpness(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, ArrayOf<float> factors, Array dst,
               I64Array dst_offsets);

}  // namespace penstock
