// crop_mirror_normalize (crop_mirror_normalize.cpp): fused crop, mirror, normalization, layout and type.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void crop_mirror_normalize(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type,
                           Array dst, I64Array dst_shapes, I64Array dst_offsets, int dst_type, I64Array anchors,
                           ArrayOf<uint8_t> mirror, ArrayOf<float> mean, ArrayOf<float> std, float scale,
                           float shift, ArrayOf<float> fill_values, int64_t channel_out_dim, bool pad_output);

}  // namespace penstock
