// One pass of a separable filter with a symmetric window (Gaussian blur, the Laplacian's derivative
// and smoothing windows) along one axis of float data seen as [outer, extent, inner], borders
// reflected without repeating the edge (reflect 101: ... 2 1 | 0 1 2 ... n-1 | n-2 ...).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/image_types.h"

namespace penstock {
namespace {  // each kernel file its own copy (the hot loop is compiled per target)

inline int64_t reflect101(int64_t i, int64_t n) {
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// dst = w_center * c + sum_k w[k] * (lo_k + hi_k): the window is symmetric, so each pair of
// taps at distance k costs one multiply.
struct SymmetricTaps {
  const float* center;
  std::vector<const float*> lo, hi;  // tap at -k and +k, k = 1..r
};

PENSTOCK_HOT_LOOP
void weighted_sum(float* dst, const SymmetricTaps& taps, const float* w, int64_t r, int64_t len) {
  for (int64_t i = 0; i < len; ++i) dst[i] = w[r] * taps.center[i];
  for (int64_t k = 1; k <= r; ++k) {
    const float *a = taps.lo[k - 1], *b = taps.hi[k - 1], wk = w[r + k];
    for (int64_t i = 0; i < len; ++i) dst[i] += wk * (a[i] + b[i]);
  }
}

// One pass along an axis of extent n: the data is [outer, n, inner].
void convolve_axis(const float* src, float* dst, int64_t outer, int64_t n, int64_t inner,
                   const std::vector<float>& w, std::vector<float>& line) {
  int64_t r = int64_t(w.size()) / 2;
  SymmetricTaps taps{nullptr, std::vector<const float*>(r), std::vector<const float*>(r)};
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = src + o * n * inner;
    float* d = dst + o * n * inner;
    if (inner >= 16) {  // long rows: combine whole rows in place, no copy
      for (int64_t j = 0; j < n; ++j) {
        taps.center = s + j * inner;
        for (int64_t k = 1; k <= r; ++k) {
          taps.lo[k - 1] = s + reflect101(j - k, n) * inner;
          taps.hi[k - 1] = s + reflect101(j + k, n) * inner;
        }
        weighted_sum(d + j * inner, taps, w.data(), r, inner);
      }
    } else {  // short rows (innermost axis): pad the line, then shifted whole-line sums
      line.resize((n + 2 * r) * inner);
      for (int64_t j = -r; j < n + r; ++j)
        std::copy(s + reflect101(j, n) * inner, s + reflect101(j, n) * inner + inner,
                  line.data() + (j + r) * inner);
      const float* mid = line.data() + r * inner;
      taps.center = mid;
      for (int64_t k = 1; k <= r; ++k) {
        taps.lo[k - 1] = mid - k * inner;
        taps.hi[k - 1] = mid + k * inner;
      }
      weighted_sum(d, taps, w.data(), r, n * inner);
    }
  }
}

}  // namespace
}  // namespace penstock
