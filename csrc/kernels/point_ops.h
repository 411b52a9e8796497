// Point operations on uint8 images (point_ops.cpp): channel histograms, lookup tables, sharpness.
#pragma once
#include <string>

#include "engine/kernel.h"

namespace penstock {

void channel_histograms(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, int64_t max_channels,
                        I64Array hist);
// Tables [N, channels, 256] of the point operations whose table depends on their parameter alone
// (`kind`: "posterize", "solarize", "solarize_add", "invert"), one parameter per sample, every
// channel alike.
ArrayOf<uint8_t> parameter_luts(const std::string& kind, ArrayOf<double> params, int64_t channels);
void apply_lut(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, ArrayOf<uint8_t> luts, Array dst,
               I64Array dst_offsets);
void sharpness(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, ArrayOf<float> factors, Array dst,
               I64Array dst_offsets);

}  // namespace penstock
