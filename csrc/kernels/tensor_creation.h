// broadcast_samples (tensor_creation.cpp): each sample broadcast to the shape of its output sample.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void broadcast_samples(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                       I64Array dst_shapes, I64Array dst_offsets);

}  // namespace penstock
