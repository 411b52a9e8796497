// color_matrix (color.cpp): a per-sample affine colour transform of the channel axis.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void color_matrix(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type, Array dst,
                  I64Array dst_shapes, I64Array dst_offsets, int dst_type, ArrayOf<float> matrices);

// The colour operators' matrices [N, C, C + 1] (float32; the last column is the offset), worked out
// in double per sample for a batch of `n`; the columns are [n] values or [1] for every sample. Run with the GIL held:
// numpy on a batch's [N, C, C + 1] tables gave it away about ten times a batch.
// gain * in_c + offset for each of `channels` channels (brightness, contrast):
ArrayOf<float> scaled_identity_matrices(int64_t n, ArrayOf<double> gain, ArrayOf<double> offset, int64_t channels);
// RGB -> RGB [N, 3, 4]: to YIQ (`rgb_to_yiq` [3, 3]), the chroma plane rotated by the hue (degrees) and
// scaled by the saturation, everything by the value, back (`yiq_to_rgb`), all times `gain`, plus
// `offset` (hsv, hue, saturation, color_twist):
ArrayOf<float> hsv_matrices(int64_t n, ArrayOf<double> hue, ArrayOf<double> saturation, ArrayOf<double> value,
                            ArrayOf<double> gain, ArrayOf<double> offset, ArrayOf<double> yiq_to_rgb,
                            ArrayOf<double> rgb_to_yiq);

}  // namespace penstock
