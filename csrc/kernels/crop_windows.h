// random_crop_windows (crop_windows.cpp): the random-window algorithm of decoders.image_random_crop
// and random_resized_crop for a batch, from draws made beforehand (so the random stream is the
// caller's). Small per-batch planning: it runs with the GIL held, one call per batch, instead of
// some forty array operations each of which gives the GIL away.
#pragma once
#include "engine/kernel.h"

namespace penstock {

// hw [N, 2] image heights and widths; area_draws, ratio_draws [N, attempts] (areas as fractions of
// the image, aspect ratios); area and ratio: the [min, max] ranges. Returns [N, 2] (h, w) of each
// window: the first attempt that fits, else the whole image clamped to the ratio range and scaled
// down to the largest area.
I64Array random_crop_sizes(I64Array hw, ArrayOf<double> area_draws, ArrayOf<double> ratio_draws, double min_area,
                           double max_area, double min_ratio, double max_ratio);

}  // namespace penstock
