// Occlusion kernels (occlusion.cpp): erase (boxes filled) and grid_mask.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void erase(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
           I64Array dst_offsets, I64Array boxes, I64Array box_offsets, ArrayOf<float> fill);
void grid_mask(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
               I64Array dst_offsets, ArrayOf<float> params);

}  // namespace penstock
