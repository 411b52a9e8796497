// gather and copy_ranges (gather.cpp): separately allocated arrays packed back to back into one
// buffer, and byte ranges of one buffer copied into another.
#pragma once
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void gather(ThreadPool& pool, std::vector<Array> srcs, I64Array dst_offsets, Array dst);
void copy_ranges(ThreadPool& pool, Array src, I64Array src_offsets, Array dst, I64Array dst_offsets,
                 I64Array counts);

}  // namespace penstock
