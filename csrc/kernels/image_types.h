// Element types accepted by the image kernels (colour, filters, warps, occlusion) and fast
// float -> pixel helpers. The dispatch set is narrower than PENSTOCK_DISPATCH_NUMERIC so that
// kernels templated on input AND output type stay small to compile.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

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

// floor(v) as an integer, for |v| well inside the int64 range (callers bound v first).
inline int64_t floor_int(float v) {
  int64_t i = static_cast<int64_t>(v);
  return i - int64_t(static_cast<float>(i) > v);
}

}  // namespace penstock
