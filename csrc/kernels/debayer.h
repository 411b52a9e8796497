// debayer (debayer.cpp): bilinear demosaicing or grey conversion of Bayer frames.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void debayer(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int type, Array dst,
             I64Array dst_offsets, ArrayOf<int32_t> blue, bool grey);

}  // namespace penstock
