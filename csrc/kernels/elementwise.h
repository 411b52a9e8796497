// Element-wise kernels over whole batches (elementwise.cpp): cast, binary arithmetic with
// per-sample broadcasting, unary math.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void cast(ThreadPool& pool, Array src, int src_code, Array dst, int dst_code, bool crop_conversion);
void binary(ThreadPool& pool, int op, int code, Array a, I64Array a_shapes, I64Array a_offsets, Array b,
            I64Array b_shapes, I64Array b_offsets, Array out, I64Array out_shapes, I64Array out_offsets);
void unary(ThreadPool& pool, int op, int code, Array src, Array dst);

// The GPU binary kernels' descriptor per sample [N, 28] (csrc/cuda/elementwise.cu): the output's
// offset and volume, the operands' offsets, the output's shape (padded with 1 to 8 dims), then per
// operand its element strides over the output's dims (its dims right-aligned with the output's; 0
// where it is broadcast). Operand shapes and offsets have N rows or 1 (one for every sample). Runs
// with the GIL held: numpy gave it away about a dozen times a batch for it.
I64Array binary_descriptors(I64Array out_shapes, I64Array out_offsets, I64Array a_shapes, I64Array a_offsets,
                            I64Array b_shapes, I64Array b_offsets);

}  // namespace penstock
