// Element types accepted by the image kernels (colour, filters, warps, occlusion) and fast
// float -> pixel helpers. The dispatch set is narrower than PENSTOCK_DISPATCH_NUMERIC so that
// kernels templated on input AND output type stay small to compile.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/convert.h"
#include "engine/dtype.h"

#define PENSTOCK_DISPATCH_IMAGE(code, T, ...)                                     \
  switch (static_cast<::penstock::DType>(code)) {                                 \
    case ::penstock::DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::INT16: { using T = int16_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::UINT16: { using T = uint16_t; __VA_ARGS__; break; }   \
    case ::penstock::DType::INT32: { using T = int32_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::FLOAT: { using T = float; __VA_ARGS__; break; }       \
    default:                                                                      \
      throw std::invalid_argument("image kernels do not support element type " +  \
                                  ::penstock::dtype_name(code) +                  \
                                  " (supported: UINT8, INT16, UINT16, INT32, FLOAT)"); \
  }

// Hot pixel loops are compiled twice (AVX2 and baseline x86-64), picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PENSTOCK_HOT_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define PENSTOCK_HOT_LOOP
#endif

namespace penstock {

// Same result as convert_sat<Out>(float) (round half away from zero, saturate, NaN -> 0), but
// without a libm round() call for 8/16-bit outputs, so pixel loops stay inlined/vectorizable.
template <typename Out>
inline Out pixel_cast(float v) {
  if constexpr (std::is_integral_v<Out> && sizeof(Out) <= 2) {
    constexpr float lo = float(std::numeric_limits<Out>::min());
    constexpr float hi = float(std::numeric_limits<Out>::max());
    v = v == v ? v : 0.f;
    v = v < lo ? lo : (v > hi ? hi : v);
    int32_t t = static_cast<int32_t>(v);  // truncates toward zero
    float frac = v - static_cast<float>(t);  // exact
    t += int32_t(frac >= 0.5f) - int32_t(frac <= -0.5f);
    return static_cast<Out>(t);
  } else {
    return convert_sat<Out>(v);
  }
}

// pixel_cast over a row. GCC will not vectorize the scalar version's float clamps (they may
// trap), so 8/16-bit outputs use SSE2 (baseline on x86-64) four values at a time.
template <typename Out>
inline void pixel_cast_row(const float* src, Out* dst, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_integral_v<Out> && sizeof(Out) <= 2) {
    const __m128 lo = _mm_set1_ps(float(std::numeric_limits<Out>::min()));
    const __m128 hi = _mm_set1_ps(float(std::numeric_limits<Out>::max()));
    const __m128 half = _mm_set1_ps(0.5f), neg_half = _mm_set1_ps(-0.5f);
    alignas(16) int32_t lanes[4];
    for (; i + 4 <= n; i += 4) {
      __m128 v = _mm_loadu_ps(src + i);
      v = _mm_and_ps(v, _mm_cmpeq_ps(v, v));  // NaN -> 0
      v = _mm_min_ps(_mm_max_ps(v, lo), hi);
      __m128i t = _mm_cvttps_epi32(v);
      __m128 frac = _mm_sub_ps(v, _mm_cvtepi32_ps(t));
      t = _mm_sub_epi32(t, _mm_castps_si128(_mm_cmpge_ps(frac, half)));      // +1 (mask is -1)
      t = _mm_add_epi32(t, _mm_castps_si128(_mm_cmple_ps(frac, neg_half)));  // -1
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes), t);
      for (int k = 0; k < 4; ++k) dst[i + k] = static_cast<Out>(lanes[k]);
    }
  }
#endif
  for (; i < n; ++i) dst[i] = pixel_cast<Out>(src[i]);
}

// floor(v) as an integer, for |v| well inside the int64 range (callers bound v first).
inline int64_t floor_int(float v) {
  int64_t i = static_cast<int64_t>(v);
  return i - int64_t(static_cast<float>(i) > v);
}

}  // namespace penstock
