// coco_masks (readers_coco.cpp): COCO objects painted into pixelwise label masks.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void coco_masks(ThreadPool& pool, ArrayOf<int32_t> out, I64Array out_offsets, I64Array heights, I64Array widths,
                ArrayOf<int32_t> labels, I64Array obj_off, I64Array obj_cnt, ArrayOf<int32_t> poly, I64Array poly_off,
                I64Array poly_cnt, ArrayOf<float> vertices, I64Array vert_off, I64Array rle, I64Array rle_off,
                I64Array rle_cnt, I64Array rle_counts);

}  // namespace penstock
