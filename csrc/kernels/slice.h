// slice (slice.cpp): a window of every sample, with flips and fill outside the input.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void slice(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst, I64Array dst_shapes,
           I64Array dst_offsets, I64Array anchors, I64Array flips, Array fill, int64_t channel_dim);

// The GPU slice kernel's descriptor per sample [N, 28] (csrc/cuda/slice.cu): source and output
// offsets, the output's volume, the bit mask of the flipped dimensions (flips [N, nd], nonzero:
// flipped), then the source and output shapes padded with 1 and the anchors padded with 0 to 8
// dimensions. Runs with the GIL held: numpy gave it away half a dozen times a batch of 256 for it.
I64Array slice_descriptors(I64Array src_shapes, I64Array src_offsets, I64Array dst_shapes, I64Array dst_offsets,
                           I64Array anchors, I64Array flips);

}  // namespace penstock
