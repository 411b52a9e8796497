// write_ppm (dump_image.cpp): uint8 HWC samples written as plain PPM files.
#pragma once
#include <string>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void write_ppm(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, std::vector<std::string> paths);

}  // namespace penstock
