// read_file_ranges (file_ranges.cpp): byte ranges of files into one packed buffer, in parallel.
#pragma once
#include <string>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

Array read_file_ranges(ThreadPool& pool, const std::vector<std::string>& paths, I64Array offsets, I64Array sizes);

}  // namespace penstock
