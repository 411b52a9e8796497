// Draws from a numpy BitGenerator in native code, the same numbers numpy's Generator methods give:
// a batch's random planning runs in one engine call with the GIL held, where each numpy draw would
// give the GIL away (numpy draws arrays without it). The caller holds the generator's lock.
#pragma once
#include <cstdint>

namespace penstock {

// numpy's bitgen_t (numpy/random/bitgen.h): the C face of a BitGenerator, from its capsule.
struct NumpyBitGenerator {
  void* state;
  uint64_t (*next_uint64)(void* state);
  uint32_t (*next_uint32)(void* state);
  double (*next_double)(void* state);
  uint64_t (*next_raw)(void* state);
};

// Generator.random(): a double in [0, 1).
inline double next_double(NumpyBitGenerator& bits) { return bits.next_double(bits.state); }

// Generator.integers(0, range + 1) for one element (random_bounded_uint64 as numpy calls it element
// by element): Lemire's method on 32-bit words below 2^32 - 1, on 64-bit words above.
inline uint64_t bounded_draw(NumpyBitGenerator& bits, uint64_t range) {
  if (range == 0) return 0;
  if (range < 0xFFFFFFFFULL) {
    const uint32_t excl = uint32_t(range) + 1;
    uint64_t m = uint64_t(bits.next_uint32(bits.state)) * excl;
    uint32_t leftover = uint32_t(m);
    if (leftover < excl) {
      const uint32_t threshold = (UINT32_MAX - uint32_t(range)) % excl;
      while (leftover < threshold) {
        m = uint64_t(bits.next_uint32(bits.state)) * excl;
        leftover = uint32_t(m);
      }
    }
    return m >> 32;
  }
  if (range == 0xFFFFFFFFULL) return bits.next_uint32(bits.state);
  if (range == UINT64_MAX) return bits.next_uint64(bits.state);
  const uint64_t excl = range + 1;
  unsigned __int128 m = (unsigned __int128)bits.next_uint64(bits.state) * excl;
  uint64_t leftover = uint64_t(m);
  if (leftover < excl) {
    const uint64_t threshold = (UINT64_MAX - range) % excl;
    while (leftover < threshold) {
      m = (unsigned __int128)bits.next_uint64(bits.state) * excl;
      leftover = uint64_t(m);
    }
  }
  return uint64_t(m >> 64);
}

}  // namespace penstock
