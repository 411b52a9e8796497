// decoders.inflate's CPU kernel (inflate.cpp): LZ4 blocks decompressed, every chunk of a batch in one call.
#pragma once
#include <cstdint>

#include "engine/kernel.h"

namespace penstock {

// Chunk c is bytes [src_starts[c], + src_sizes[c]) of `src`, an LZ4 block (the raw block format, no
// frame) that must decompress to exactly dst_sizes[c] bytes at dst_starts[c] of `dst`. A chunk that
// does not throws SampleError(c, why).
void inflate_lz4(ThreadPool& pool, ArrayOf<uint8_t> src, I64Array src_starts, I64Array src_sizes, Array dst,
                 I64Array dst_starts, I64Array dst_sizes);

}  // namespace penstock
