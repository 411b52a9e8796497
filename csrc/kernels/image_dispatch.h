// Element types accepted by the image kernels (colour, filters, warps, occlusion): a narrower
// set than PENSTOCK_DISPATCH_NUMERIC, so that kernels templated on input AND output type stay
// small to compile.
#pragma once
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
