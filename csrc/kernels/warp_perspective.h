// warp_perspective and remap (warp_perspective.cpp): OpenCV's perspective warp and per-pixel remapping.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void warp_perspective(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                      I64Array dst_shapes, I64Array dst_offsets, int dtype, ArrayOf<double> matrices, int interp,
                      int border, ArrayOf<double> fill);
void remap(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_shapes,
           I64Array dst_offsets, int dtype, ArrayOf<float> mapx, ArrayOf<float> mapy, I64Array map_offsets, int interp,
           bool centre);

}  // namespace penstock
