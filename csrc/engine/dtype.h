// Element types, numbered as DALIDataType, and dispatch from a runtime code to a C++ type.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace penstock {

// float16 is carried as raw bits; kernels that accept it convert through float.
struct float16 {
  uint16_t bits;
};

enum class DType : int {
  UINT8 = 0, UINT16 = 1, UINT32 = 2, UINT64 = 3,
  INT8 = 4, INT16 = 5, INT32 = 6, INT64 = 7,
  FLOAT16 = 8, FLOAT = 9, FLOAT64 = 10, BOOL = 11,
};

inline std::string dtype_name(int code) {
  static const char* names[] = {"UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                "INT32", "INT64", "FLOAT16", "FLOAT", "FLOAT64", "BOOL"};
  return code >= 0 && code < 12 ? names[code] : "type#" + std::to_string(code);
}

}  // namespace penstock

// Calls BODY with `T` bound to the C++ type of `code` (numeric types and bool).
#define PENSTOCK_DISPATCH_NUMERIC(code, T, ...)                                   \
  switch (static_cast<::penstock::DType>(code)) {                                 \
    case ::penstock::DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::UINT16: { using T = uint16_t; __VA_ARGS__; break; }   \
    case ::penstock::DType::UINT32: { using T = uint32_t; __VA_ARGS__; break; }   \
    case ::penstock::DType::UINT64: { using T = uint64_t; __VA_ARGS__; break; }   \
    case ::penstock::DType::INT8: { using T = int8_t; __VA_ARGS__; break; }       \
    case ::penstock::DType::INT16: { using T = int16_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::INT32: { using T = int32_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::INT64: { using T = int64_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::FLOAT: { using T = float; __VA_ARGS__; break; }       \
    case ::penstock::DType::FLOAT64: { using T = double; __VA_ARGS__; break; }    \
    case ::penstock::DType::BOOL: { using T = bool; __VA_ARGS__; break; }         \
    default:                                                                      \
      throw std::invalid_argument("unsupported element type " +                   \
                                  ::penstock::dtype_name(code));                  \
  }
