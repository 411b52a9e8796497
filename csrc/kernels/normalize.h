// normalize (normalize.cpp): (x - mean) / stddev * scale + shift in double into a float32 batch.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void normalize(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets, Array dst,
               I64Array dst_offsets, ArrayOf<double, true> mean, I64Array mean_offsets, I64Array mean_strides,
               ArrayOf<double, true> stddev, I64Array std_offsets, I64Array std_strides, double scale, double shift);

}  // namespace penstock
