// Float -> output element conversion for the geometry kernels' inner loops: the same results as
// convert_sat / float_to_half (round half away from zero and saturate; float16 rounds to nearest
// even), but branch-free on the data, so random pixel values cost no mispredictions. Integers may
// also be rounded half to even (Rounding::HalfToEven), as the operators that match DALI's own
// rounding (its CPU filter's) ask.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "engine/convert.h"

namespace penstock {

// Added before truncation to round half away from zero. Adding 0.5f itself would round
// 0.49999997f up: v + 0.5f is not representable in [0.75, 1) and float addition rounds it to 1.
constexpr float kJustBelowHalf = 0.49999997f;  // nextafter(0.5f, 0)

// Rounding to nearest even is done by integer addition on the bit pattern instead of a
// data-dependent comparison of the dropped bits.
inline uint16_t float_to_half_rne(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7fffffff;
  if (x >= 0x47800000u)  // >= 65536 (overflows to inf after rounding), inf or NaN
    return uint16_t(sign | (x > 0x7f800000u ? 0x7e00 : 0x7c00));
  if (x < 0x38800000u) {  // below the smallest normal half: let float addition round it
    float a, magic;
    uint32_t magic_bits = 0x3f000000u;  // 0.5: aligns the half subnormal step (2^-24) to 1 ulp
    std::memcpy(&a, &x, 4);
    std::memcpy(&magic, &magic_bits, 4);
    a += magic;
    uint32_t r;
    std::memcpy(&r, &a, 4);
    return uint16_t(sign | (r - magic_bits));
  }
  uint32_t odd = (x >> 13) & 1;
  x += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round half to even
  return uint16_t(sign | (x >> 13));
}

enum class Rounding { HalfAwayFromZero, HalfToEven };

// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer, ties to
// even (float addition's own rounding): exact for every clamped narrow-integer value.
constexpr float kRoundingMagic = 12582912.0f;

template <typename Out, Rounding R = Rounding::HalfAwayFromZero>
inline Out round_sat(float v) {
  if constexpr (std::is_same_v<Out, float16>) {
    return float16{float_to_half_rne(v)};
  } else if constexpr (std::is_floating_point_v<Out>) {
    return Out(v);
  } else {
    static_assert(sizeof(Out) <= 2 || std::is_same_v<Out, int32_t>, "narrow integer outputs only");
    constexpr float lo = float(std::numeric_limits<Out>::min()), hi = float(std::numeric_limits<Out>::max());
    if constexpr (std::is_signed_v<Out>) v = v == v ? v : 0.0f;  // NaN -> 0 (unsigned: the clamp does it)
    if constexpr (std::is_same_v<Out, int32_t>) {  // hi is not exact in float: clamp in double
      double d = double(v);
      d = d > double(INT32_MIN) ? d : double(INT32_MIN);
      d = d < double(INT32_MAX) ? d : double(INT32_MAX);
      if constexpr (R == Rounding::HalfToEven) return Out(int64_t(std::nearbyint(d)));
      return Out(int64_t(d + std::copysign(0.5, d)));
    } else {
      v = v > lo ? v : lo;  // written as selects so they compile to maxss / minss
      v = v < hi ? v : hi;
      if constexpr (R == Rounding::HalfToEven) return Out(int32_t((v + kRoundingMagic) - kRoundingMagic));
      if constexpr (std::is_signed_v<Out>) return Out(int32_t(v + std::copysign(kJustBelowHalf, v)));
      else return Out(int32_t(v + kJustBelowHalf));
    }
  }
}

// Converts a contiguous float run. A scalar clamp loop gets compiled into branches, which
// mispredict on real pixel data, so: uint8 uses SSE2 saturating packs (16 values per step;
// SSE2 is baseline x86-64), other narrow integers GCC vector extensions (SSE/NEON), 4 per step.
template <typename Out, Rounding R = Rounding::HalfAwayFromZero>
void convert_row(const float* in, int64_t n, Out* out) {
  int64_t i = 0;
#ifdef __SSE2__
  if constexpr (std::is_same_v<Out, uint8_t>) {  // the common case: 16 at a time with saturating packs
    const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f), half = _mm_set1_ps(kJustBelowHalf);
    auto conv4 = [&](const float* p) {  // max first: it maps NaN to 0
      __m128 v = _mm_min_ps(_mm_max_ps(_mm_loadu_ps(p), zero), top);
      // cvtps rounds in the current rounding mode: to nearest even (the default)
      if constexpr (R == Rounding::HalfToEven) return _mm_cvtps_epi32(v);
      return _mm_cvttps_epi32(_mm_add_ps(v, half));
    };
    for (; i + 16 <= n; i += 16) {
      __m128i lo = _mm_packs_epi32(conv4(in + i), conv4(in + i + 4));
      __m128i hi = _mm_packs_epi32(conv4(in + i + 8), conv4(in + i + 12));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(lo, hi));
    }
  }
#endif
  if constexpr (std::is_integral_v<Out> && sizeof(Out) <= 2) {
    typedef float v4f __attribute__((vector_size(16)));
    typedef int32_t v4i __attribute__((vector_size(16)));
    constexpr float lo = float(std::numeric_limits<Out>::min()), hi = float(std::numeric_limits<Out>::max());
    const v4f vlo = {lo, lo, lo, lo}, vhi = {hi, hi, hi, hi}, half = {kJustBelowHalf, kJustBelowHalf, kJustBelowHalf, kJustBelowHalf};
    for (; i + 4 <= n; i += 4) {
      v4f v;
      std::memcpy(&v, in + i, sizeof(v));
      v = v == v ? v : v4f{};  // NaN -> 0
      v = v > vlo ? v : vlo;
      v = v < vhi ? v : vhi;
      v4f r;
      if constexpr (R == Rounding::HalfToEven) {
        const v4f magic = {kRoundingMagic, kRoundingMagic, kRoundingMagic, kRoundingMagic};
        r = (v + magic) - magic;
      } else {
        r = std::is_signed_v<Out> ? (v < 0 ? v - half : v + half) : v + half;
      }
      v4i q = __builtin_convertvector(r, v4i);  // truncation completes the rounding
      for (int k = 0; k < 4; ++k) out[i + k] = Out(q[k]);
    }
  }
  for (; i < n; ++i) out[i] = round_sat<Out, R>(in[i]);
}

}  // namespace penstock
