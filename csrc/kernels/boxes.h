// box_encoder (boxes.cpp): SSD matching of ground-truth boxes to anchors, a batch at a time.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void box_encoder(ThreadPool& pool, ArrayOf<float> boxes, I64Array box_counts, I64Array box_offsets,
                 ArrayOf<int32_t> labels, ArrayOf<float> anchors, float criteria, bool offset, float scale,
                 ArrayOf<float> means, ArrayOf<float> stds, ArrayOf<float> out_boxes, ArrayOf<int32_t> out_labels);

}  // namespace penstock
