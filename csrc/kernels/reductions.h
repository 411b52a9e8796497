// reduce (reductions.cpp): sum, mean, mean square, rms, min, max, variance and standard deviation
// of every sample over some axes.
#pragma once
#include <optional>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void reduce(ThreadPool& pool, int kind, Array src, I64Array src_shapes, I64Array src_offsets,
            std::vector<int64_t> axes, Array dst, I64Array dst_offsets, int ddof,
            std::optional<ArrayOf<double, true>> mean, std::optional<I64Array> mean_offsets);

}  // namespace penstock
