// multi_paste (paste.cpp): canvases with regions of input samples pasted in order.
#pragma once
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void multi_paste(ThreadPool& pool, std::vector<Array> sources, int src_type, Array dst, I64Array dst_shapes,
                 I64Array dst_offsets, int dst_type, I64Array regions, I64Array region_start);

}  // namespace penstock
