// displacement (displacement.cpp): water, sphere and jitter displacement of HWC images.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void displacement(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int type, Array dst,
                  I64Array dst_offsets, int kind, ArrayOf<double> params, ArrayOf<int32_t> masks, bool linear,
                  double fill);

}  // namespace penstock
