// clahe (clahe.cpp): contrast limited adaptive histogram equalization of uint8 HWC images.
#pragma once
#include <tuple>

#include "engine/kernel.h"

namespace penstock {

// The fixed-point RGB -> Lab tables (gamma, cube root, matrix), for the GPU kernels.
using ClaheTables = std::tuple<ArrayOf<int32_t>, ArrayOf<int32_t>, ArrayOf<int32_t>>;
ClaheTables clahe_lab_tables();

// shapes [N, 3] (H, W, C: 1 or 3); per sample tiles (x, y) int32 [N, 2], clip limits [N]; luma: RGB
// through Lab's L, else every channel on its own.
void clahe(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_offsets,
           ArrayOf<int32_t> tiles, ArrayOf<float> clip_limits, bool luma);

}  // namespace penstock
