// Value conversion with DALI's output rules: float -> int rounds half away from zero and
// saturates (convert_trunc: truncates toward zero, as DALI's crop and slice do); int -> narrower
// int saturates; anything -> bool is "!= 0"; to float16 overflows to inf (float_to_half_sat:
// saturates to +-65504, as DALI's crop and slice do).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "engine/dtype.h"

namespace penstock {

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) { mant <<= 1; --exp; }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return uint16_t(sign | h);
}

// float_to_half, but saturating to the largest finite half (+-65504); NaN stays NaN.
inline uint16_t float_to_half_sat(float f) {
  constexpr float kMax = 65504.0f;
  return float_to_half(std::isnan(f) ? f : std::min(std::max(f, -kMax), kMax));
}

template <typename Out, typename In>
inline Out convert_sat(In v) {
  if constexpr (std::is_same_v<Out, In>) {
    return v;
  } else if constexpr (std::is_same_v<Out, bool>) {
    return v != In(0);
  } else if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(v);
  } else if constexpr (std::is_floating_point_v<In>) {
    if (std::isnan(v)) return Out(0);
    In r = std::round(v);  // half away from zero
    if (r <= static_cast<In>(std::numeric_limits<Out>::min())) return std::numeric_limits<Out>::min();
    if (r >= static_cast<In>(std::numeric_limits<Out>::max())) return std::numeric_limits<Out>::max();
    return static_cast<Out>(r);
  } else if constexpr (std::is_same_v<In, bool>) {
    return static_cast<Out>(v);
  } else {  // integer -> integer, saturating
    using Wide = std::conditional_t<std::is_signed_v<In> || std::is_signed_v<Out>, int64_t, uint64_t>;
    if constexpr (std::is_signed_v<In> && !std::is_signed_v<Out>) {
      if (v < 0) return Out(0);
      if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<Out>::max()))
        return std::numeric_limits<Out>::max();
      return static_cast<Out>(v);
    } else if constexpr (!std::is_signed_v<In> && std::is_signed_v<Out>) {
      if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<Out>::max()))
        return std::numeric_limits<Out>::max();
      return static_cast<Out>(v);
    } else {
      Wide w = static_cast<Wide>(v);
      if (w < static_cast<Wide>(std::numeric_limits<Out>::min())) return std::numeric_limits<Out>::min();
      if (w > static_cast<Wide>(std::numeric_limits<Out>::max())) return std::numeric_limits<Out>::max();
      return static_cast<Out>(v);
    }
  }
}

// convert_sat, except that float -> integer truncates toward zero first (DALI's crop and slice
// outputs); NaN still gives 0.
template <typename Out, typename In>
inline Out convert_trunc(In v) {
  if constexpr (std::is_floating_point_v<In> && std::is_integral_v<Out> && !std::is_same_v<Out, bool>) {
    return convert_sat<Out>(std::trunc(v));
  } else {
    return convert_sat<Out>(v);
  }
}

}  // namespace penstock
