// read_files (file_io.cpp): whole files into one packed buffer, in parallel.
#pragma once
#include <string>
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// (buffer uint8 [total], sizes int64 [N]); sample i is buffer[offset_i : offset_i + size_i].
std::tuple<ArrayOf<uint8_t>, I64Array> read_files(ThreadPool& pool, const std::vector<std::string>& paths);

}  // namespace penstock
