// gaussian_blur (gaussian_blur.cpp): a separable Gaussian blur of (frames, spatial..., channels) samples.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void gaussian_blur(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
                   I64Array dst_offsets, int dst_type, ArrayOf<float> sigmas, I64Array windows);

}  // namespace penstock
