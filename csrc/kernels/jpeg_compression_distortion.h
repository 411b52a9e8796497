// jpeg_compression_distortion (jpeg_compression_distortion.cpp): a JPEG round trip per frame.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void jpeg_compression_distortion(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                                 I64Array dst_offsets, I64Array qualities);

}  // namespace penstock
