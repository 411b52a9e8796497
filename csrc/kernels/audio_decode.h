// decoders.audio's kernels (audio_decode.cpp): libsndfile opened at run time, a batch decoded per call.
#pragma once
#include <optional>
#include <string>
#include <tuple>

#include "engine/kernel.h"

namespace penstock {

// Opens libsndfile from `path` (once per process; later calls return the loaded version).
std::string audio_library(const std::string& path);

// Decodes a batch of encoded files: (buffer, shapes [N, 1 or 2], offsets, the files' own sample rates).
std::tuple<Array, I64Array, I64Array, ArrayOf<float>> audio_decode(
    ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, int out_type, bool downmix,
    ArrayOf<double, true> target_rates, double quality, std::optional<ArrayOf<double, true>> starts,
    std::optional<ArrayOf<double, true>> durations);

}  // namespace penstock
