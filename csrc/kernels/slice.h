// slice (slice.cpp): a window of every sample, with flips and fill outside the input.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void slice(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst, I64Array dst_shapes,
           I64Array dst_offsets, I64Array anchors, ArrayOf<uint8_t> flips, Array fill, int64_t channel_dim);

}  // namespace penstock
