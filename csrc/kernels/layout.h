// Layout kernels (layout.cpp): a parallel copy, per-sample transposition, concatenation.
#pragma once
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void copy(ThreadPool& pool, Array src, Array dst);
void transpose(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, std::vector<int64_t> perm,
               Array dst, I64Array dst_shapes, I64Array dst_offsets);
// The GPU transpose kernel's descriptor per sample [N, 19] (csrc/cuda/slice.cu): source and output
// offsets, the volume, the output's shape (the source's dims in `perm` order, padded with 1 to 8
// dims), then the source's element strides in that order (padded with 0). Runs with the GIL held
// (numpy gave it away about ten times a batch for it).
I64Array transpose_descriptors(I64Array src_shapes, I64Array src_offsets, std::vector<int64_t> perm,
                               I64Array dst_offsets);
// inputs: list of (data, shapes, offsets) with equal ndim; axis < ndim.
void concat(ThreadPool& pool, std::vector<Array> datas, std::vector<I64Array> shapes, std::vector<I64Array> offsets,
            int64_t axis, Array dst, I64Array dst_shapes, I64Array dst_offsets);

}  // namespace penstock
