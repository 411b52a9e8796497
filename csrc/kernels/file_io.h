// read_files (file_io.cpp): whole files into one packed buffer, in parallel.
#pragma once
#include <string>
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// (buffer uint8 [total], sizes int64 [N]); sample i is buffer[offset_i : offset_i + size_i].
std::tuple<ArrayOf<uint8_t>, I64Array> read_files(ThreadPool& pool, const std::vector<std::string>& paths);

// A reader's file paths, converted from Python's strings once: a batch then names its files by
// index (converting a batch's 256 paths took ~0.2 ms with the GIL held, every batch).
struct FileList {
  std::vector<std::string> paths;
};

// read_files of the files `indices` of `files` (an index out of range is an std::out_of_range).
std::tuple<ArrayOf<uint8_t>, I64Array> read_listed_files(ThreadPool& pool, const FileList& files,
                                                         const I64Array& indices);

}  // namespace penstock
