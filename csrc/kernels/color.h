// color_matrix (color.cpp): a per-sample affine colour transform of the channel axis.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void color_matrix(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type, Array dst,
                  I64Array dst_shapes, I64Array dst_offsets, int dst_type, ArrayOf<float> matrices);

}  // namespace penstock
