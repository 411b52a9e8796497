// noise (noise.cpp): Gaussian, shot or salt-and-pepper noise over a batch.
#pragma once
#include "engine/kernel.h"

namespace penstock {

void noise(ThreadPool& pool, int kind, Array in, I64Array shapes, I64Array offsets, Array out, I64Array out_offsets,
           ArrayOf<uint64_t> seeds, ArrayOf<double> params, int64_t channels, int dtype);

}  // namespace penstock
