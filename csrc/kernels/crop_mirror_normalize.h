// crop_mirror_normalize (crop_mirror_normalize.cpp): fused crop, mirror, normalization, layout and type.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void crop_mirror_normalize(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type,
                           Array dst, I64Array dst_shapes, I64Array dst_offsets, int dst_type, I64Array anchors,
                           ArrayOf<uint8_t> mirror, ArrayOf<float> mean, ArrayOf<float> std, float scale,
                           float shift, ArrayOf<float> fill_values, int64_t channel_out_dim, bool pad_output);

// The GPU kernel's per-sample plan (crop_mirror_normalize.cu), made with the GIL held (numpy gave it
// away a dozen times a batch for these [N, 28] columns): one descriptor row per sample (source and
// output offsets, mirror, output volume, then, each padded to 8 dimensions, the source's shape
// without its channels and the window's anchor and shape: the output's without its channel
// dimension `channel_out_dim`), and scale / std as floats (std [N, C] must hold no 0).
// mirror and std come in the operator's own types: a cast on the way in gave the GIL away.
ArrayTuple crop_mirror_normalize_plan(I64Array src_shapes, I64Array src_offsets, I64Array dst_shapes,
                                      I64Array dst_offsets, I64Array anchors, ArrayOf<uint8_t> mirror,
                                      ArrayOf<float> std, double scale, int64_t channel_out_dim);

}  // namespace penstock
