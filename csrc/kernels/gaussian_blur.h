// gaussian_blur (gaussian_blur.cpp): a separable Gaussian blur of (frames, spatial..., channels) samples.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void gaussian_blur(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
                   I64Array dst_offsets, int dst_type, ArrayOf<float> sigmas, I64Array windows);

// gaussian_blur's windows for a batch of `n`: sigmas and window sizes [N, k] (or [1, k] for every
// sample) with each pair's missing half filled in as DALI does (a window of 2 ceil(3 sigma) + 1, a
// sigma of OpenCV's rule); returns them as float32 and int64 [N, k]. Bad values raise
// std::invalid_argument in DALI's words, naming the sample and the axis.
ArrayTuple blur_windows(int64_t n, ArrayOf<double> sigma, I64Array window);

// The blur's Gaussian weights for sigmas [N, k] (float32) and odd window sizes [N, k], the CPU kernel's
// (normalized exp(-x^2 / (2 sigma^2)) over [-r, r] in float): all windows back to back, and where each
// (sample, axis) window starts [N, k]. Both run with the GIL held (numpy gave it away dozens of
// times a batch for them).
ArrayTuple gaussian_windows(ArrayOf<float> sigmas, I64Array windows);

}  // namespace penstock
