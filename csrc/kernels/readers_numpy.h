// readers.numpy's and decoders.numpy's kernels (readers_numpy.cpp): .npy headers, of files or of
// in-memory files, and the arrays or windows of them.
#pragma once
#include <string>
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// (dtype codes int32 [N], elem sizes int64 [N], fortran uint8 [N], data offsets int64 [N],
// ndims int64 [N], shapes int64 [N, max_ndim] (zero padded))
using NpyHeaders = std::tuple<ArrayOf<int32_t>, I64Array, ArrayOf<uint8_t>, I64Array, I64Array, I64Array>;
NpyHeaders npy_headers(ThreadPool& pool, const std::vector<std::string>& paths);
NpyHeaders npy_buffer_headers(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets);

void npy_read(ThreadPool& pool, const std::vector<std::string>& paths, I64Array data_offsets,
              ArrayOf<uint8_t> fortran, I64Array src_shapes, I64Array anchors, Array out, I64Array out_shapes,
              I64Array out_offsets, int64_t elem_size, ArrayOf<uint8_t> fill);
void npy_decode(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, I64Array data_offsets,
                ArrayOf<uint8_t> fortran, Array out, I64Array out_shapes, I64Array out_offsets, int64_t elem_size);

}  // namespace penstock
