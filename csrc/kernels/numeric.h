// Element access shared by the statistics kernels (reductions.cpp, normalize.cpp): float16 read and
// written through float, a dispatch that includes it, and the DType code of an array.
#pragma once
#include <stdexcept>
#include <string>

#include "engine/convert.h"
#include "engine/dtype.h"
#include "engine/kernel.h"

namespace penstock {

template <typename T>
inline auto value_of(T v) {
  return v;
}
inline float value_of(float16 v) { return half_to_float(v.bits); }

// A C cast (numpy's astype) of a computed value into an element of type Out.
template <typename Out, typename V>
inline Out cast_to(V v) {
  if constexpr (std::is_same_v<Out, float16>) {
    return float16{float_to_half(static_cast<float>(v))};
  } else {
    return static_cast<Out>(v);
  }
}

template <typename T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || std::is_same_v<T, float16>;

// The DType code of an array's elements.
inline int dtype_code(const Array& a) {
  char kind = a.kind();
  auto size = a.itemsize();
  int log2 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
  if (kind == 'b' && size == 1) return static_cast<int>(DType::BOOL);
  if (kind == 'u' && log2 >= 0) return log2;
  if (kind == 'i' && log2 >= 0) return 4 + log2;
  if (kind == 'f' && log2 >= 1) return 7 + log2;
  throw std::invalid_argument(std::string("unsupported numpy element type '") + kind + std::to_string(size) + "'");
}

}  // namespace penstock

// PENSTOCK_DISPATCH_NUMERIC plus FLOAT16 (as penstock::float16).
#define PENSTOCK_DISPATCH_WITH_HALF(code, T, ...)                         \
  if (static_cast<::penstock::DType>(code) == ::penstock::DType::FLOAT16) { \
    using T = ::penstock::float16;                                        \
    __VA_ARGS__;                                                          \
  } else {                                                                \
    PENSTOCK_DISPATCH_NUMERIC(code, T, __VA_ARGS__)                       \
  }
