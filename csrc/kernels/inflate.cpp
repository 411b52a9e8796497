// decoders.inflate on the CPU: LZ4 block decompression, each chunk bounds-checked against its input
// and its output (a corrupt chunk is an error of its chunk, never a read or write outside them).
//
// An LZ4 block is a run of sequences: a token (high nibble: literal count, low nibble: match length
// less 4; a nibble of 15 continues in bytes of 255 until one below), the literals, then a 2-byte
// little-endian offset back into the output and the match copied from there (it may overlap what it
// writes). The last sequence has literals only.
#include <cstring>
#include <string>

#include "kernels/inflate.h"

namespace penstock {
namespace {

// The decompressed size of [in, in + n) written into [out, out + capacity), or an error text.
int64_t lz4_block(const uint8_t* in, int64_t n, uint8_t* out, int64_t capacity, std::string& error) {
  const uint8_t* end = in + n;
  int64_t written = 0;
  auto length = [&](int64_t base, int64_t& value) {  // a nibble's count with its extension bytes
    value = base;
    if (base != 15) return true;
    for (;;) {
      if (in >= end) return false;
      uint8_t b = *in++;
      value += b;
      if (b != 255) return true;
    }
  };
  while (in < end) {
    uint8_t token = *in++;
    int64_t literals, match;
    if (!length(token >> 4, literals) || literals > end - in) {
      error = "its literals run past the end of the compressed data";
      return -1;
    }
    if (literals > capacity - written) {
      error = "it decompresses to more bytes than the output holds";
      return -1;
    }
    std::memcpy(out + written, in, literals);
    in += literals;
    written += literals;
    if (in == end) return written;  // the last sequence: literals only
    if (end - in < 2) {
      error = "a match offset is cut short";
      return -1;
    }
    int64_t offset = in[0] | (in[1] << 8);
    in += 2;
    if (offset == 0 || offset > written) {
      error = "a match refers to data before the start of the output";
      return -1;
    }
    if (!length(token & 15, match)) {
      error = "a match length runs past the end of the compressed data";
      return -1;
    }
    match += 4;
    if (match > capacity - written) {
      error = "it decompresses to more bytes than the output holds";
      return -1;
    }
    uint8_t* dst = out + written;
    const uint8_t* from = dst - offset;
    if (offset >= match) {
      std::memcpy(dst, from, match);
    } else {
      for (int64_t k = 0; k < match; ++k) dst[k] = from[k];  // overlapping: byte by byte, as the format means
    }
    written += match;
  }
  error = "the compressed data is empty or ends with a match (the last sequence must be literals only)";
  return -1;
}

}  // namespace

void inflate_lz4(ThreadPool& pool, ArrayOf<uint8_t> src, I64Array src_starts, I64Array src_sizes, Array dst,
                 I64Array dst_starts, I64Array dst_sizes) {
  const int64_t n = src_starts.shape(0);
  if (src_sizes.shape(0) != n || dst_starts.shape(0) != n || dst_sizes.shape(0) != n)
    throw std::invalid_argument("inflate_lz4: the chunk descriptions differ in length");
  const int64_t dst_bytes = dst.nbytes();
  auto* out = static_cast<uint8_t*>(dst.mutable_data());
  for (int64_t c = 0; c < n; ++c)
    if (src_starts.at(c) < 0 || src_sizes.at(c) < 0 || src_starts.at(c) + src_sizes.at(c) > src.size() ||
        dst_starts.at(c) < 0 || dst_sizes.at(c) < 0 || dst_starts.at(c) + dst_sizes.at(c) > dst_bytes)
      throw std::invalid_argument("inflate_lz4: a chunk lies outside its buffer");
  pool.parallel_for(n, [&](int64_t c) {
    std::string error;
    int64_t got = lz4_block(src.data() + src_starts.at(c), src_sizes.at(c), out + dst_starts.at(c), dst_sizes.at(c),
                            error);
    if (got < 0) throw SampleError(c, "LZ4 chunk of " + std::to_string(src_sizes.at(c)) + " bytes: " + error);
    if (got != dst_sizes.at(c))
      throw SampleError(c, "LZ4 chunk of " + std::to_string(src_sizes.at(c)) + " bytes decompresses to " +
                               std::to_string(got) + " bytes; its shape and dtype need " +
                               std::to_string(dst_sizes.at(c)));
  });
}

}  // namespace penstock
