// random_crop_windows (image_decode_windows.cpp): the random-window algorithm of
// decoders.image_random_crop and random_resized_crop for a batch, drawing from the caller's numpy
// bit generator exactly as numpy's Generator.uniform and .integers would: one call per batch, without
// the GIL, instead of the draws and array operations of the same algorithm in numpy, each of which
// gives the GIL away.
#pragma once
#include "engine/kernel.h"
#include "engine/numpy_bits.h"

namespace penstock {

// hw [N, 2+]: image heights and widths in its first two columns (an [N, 3] batch of HWC shapes as
// it is); area and ratio: the [min, max] ranges, log_ratio their logs.
// Draws, in numpy's order: the area fractions [N, attempts] (uniform), the log aspect ratios
// [N, attempts] (uniform), then each window's y and x (integers). Returns [N, 4] (y, x, h, w): per
// sample the first attempt that fits, else the whole image clamped to the ratio range and scaled
// down to the largest area. The caller holds the bit generator's lock.
I64Array random_crop_windows(NumpyBitGenerator& bits, const I64Array& hw, int64_t attempts, double min_area,
                             double max_area, double min_ratio, double max_ratio, double log_min_ratio,
                             double log_max_ratio);

// The gather kernel's descriptors [N, 10] (csrc/cuda/image_decode.cu) of windows [N, 4] (y, x, h, w)
// of uint8 HWC images at device addresses `pointers` (row pitch in bytes, `channels` each, channels
// reversed where `reverse`) into a packed batch at element `dst_offsets`: per row the address, pitch,
// y, x, destination offset, w, h * w * channels (the work), channels, reverse and 0.
I64Array image_gather_descriptors(const ArrayOf<uint64_t>& pointers, const I64Array& pitches, const I64Array& windows,
                                  const I64Array& channels, const I64Array& reverse, const I64Array& dst_offsets);

}  // namespace penstock
