// yuv420_to_rgb (video.cpp): decoded 4:2:0 video frames to interleaved RGB, every frame in one call.
#pragma once
#include "engine/kernel.h"

namespace penstock {

// frame k: planes at y_addr/u_addr/v_addr[k] with rows y_pitch/c_pitch[k] bytes apart, samples of
// bit_depth[k] bits (8: bytes; more: little-endian 16-bit) -> height x width x 3 at dst_addr[k];
// full_range[k] selects the matrix.
void yuv420_to_rgb(ThreadPool& pool, ArrayOf<uint64_t> y_addr, ArrayOf<uint64_t> u_addr, ArrayOf<uint64_t> v_addr,
                   I64Array y_pitch, I64Array c_pitch, I64Array heights, I64Array widths, I64Array full_range,
                   I64Array bit_depth, ArrayOf<uint64_t> dst_addr);

}  // namespace penstock
