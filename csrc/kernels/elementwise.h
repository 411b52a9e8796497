// Element-wise kernels over whole batches (elementwise.cpp): cast, binary arithmetic with
// per-sample broadcasting, unary math.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void cast(ThreadPool& pool, Array src, int src_code, Array dst, int dst_code, bool crop_conversion);
void binary(ThreadPool& pool, int op, int code, Array a, I64Array a_shapes, I64Array a_offsets, Array b,
            I64Array b_shapes, I64Array b_offsets, Array out, I64Array out_shapes, I64Array out_offsets);
void unary(ThreadPool& pool, int op, int code, Array src, Array dst);

}  // namespace penstock
