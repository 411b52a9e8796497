// connected_components (segmentation.cpp): the objects of a batch of label maps.
#pragma once
#include <tuple>

#include "engine/kernel.h"

namespace penstock {

// (counts [N], labels [M], sizes [M], lo [M, nd], hi [M, nd]) over all objects M of the batch
using ConnectedComponents = std::tuple<I64Array, I64Array, I64Array, I64Array, I64Array>;
ConnectedComponents connected_components(ThreadPool& pool, I64Array data, I64Array shapes, I64Array offsets,
                                         int64_t background, bool merge_classes);

}  // namespace penstock
