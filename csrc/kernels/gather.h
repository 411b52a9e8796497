// gather (gather.cpp): separately allocated arrays packed back to back into one buffer.
#pragma once
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void gather(ThreadPool& pool, std::vector<Array> srcs, I64Array dst_offsets, Array dst);

}  // namespace penstock
