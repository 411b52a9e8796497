// warp_affine (warp.cpp): an affine warp of (frames, H, W, C) samples.
#pragma once
#include <optional>

#include "engine/kernel.h"

namespace penstock {

void warp_affine(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                 I64Array dst_shapes, I64Array dst_offsets, int dtype, ArrayOf<float> matrices, int interp,
                 std::optional<float> fill);

}  // namespace penstock
