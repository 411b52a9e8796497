// Element types accepted by the image kernels (colour, filters, warps, occlusion) and small
// helpers for their pixel loops (float -> pixel rows are in fast_convert.h). The dispatch set
// is narrower than PENSTOCK_DISPATCH_NUMERIC so that kernels templated on input AND output type
// stay small to compile.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/dtype.h"
#include "kernels/hot_loop.h"  // hot pixel loops

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

// floor(v) as an integer, for |v| well inside the int64 range (callers bound v first).
inline int64_t floor_int(float v) {
  int64_t i = static_cast<int64_t>(v);
  return i - int64_t(static_cast<float>(i) > v);
}

}  // namespace penstock
