#include "kernels/crop_windows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace penstock {
namespace {

// float64 -> int64 as numpy's astype does on x86: truncation, and INT64_MIN where it does not fit
int64_t truncated(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

I64Array random_crop_sizes(I64Array hw, ArrayOf<double> area_draws, ArrayOf<double> ratio_draws, double min_area,
                           double max_area, double min_ratio, double max_ratio) {
  if (hw.ndim() != 2 || hw.shape(1) != 2) throw std::invalid_argument("random_crop_sizes: hw must be [N, 2]");
  const int64_t n = hw.shape(0);
  if (area_draws.ndim() != 2 || area_draws.shape(0) != n || ratio_draws.ndim() != 2 ||
      ratio_draws.shape(0) != n || ratio_draws.shape(1) != area_draws.shape(1))
    throw std::invalid_argument("random_crop_sizes: the draws must be [N, attempts], alike");
  const int64_t attempts = area_draws.shape(1);
  I64Array out = I64Array::empty({n, 2});
  int64_t* sizes = out.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t h = hw.data()[2 * i], w = hw.data()[2 * i + 1];
    const double full = double(h * w);
    int64_t out_h = 1, out_w = 1;
    bool found = false;
    for (int64_t a = 0; a < attempts && !found; ++a) {
      const double area = area_draws.data()[i * attempts + a] * full, ratio = ratio_draws.data()[i * attempts + a];
      const int64_t cw = std::max<int64_t>(1, truncated(std::floor(std::sqrt(area * ratio) + 0.5)));
      const int64_t ch = std::max<int64_t>(1, truncated(std::floor(std::sqrt(area / ratio) + 0.5)));
      const double aspect = double(cw) / double(ch);
      if (cw <= w && ch <= h && min_ratio <= aspect && aspect <= max_ratio) out_h = ch, out_w = cw, found = true;
    }
    const int64_t widest = std::max<int64_t>(1, truncated(double(h) * max_ratio));
    const int64_t tallest = std::max<int64_t>(1, truncated(double(w) / min_ratio));
    if (!found) {  // the whole image, clamped to the ratio range, scaled down to the largest area
      const double whole = double(w) / double(h);
      const int64_t wh = whole > max_ratio ? h : whole < min_ratio ? tallest : h;
      const int64_t ww = whole > max_ratio ? widest : w;
      const double scale = std::min(1.0, std::sqrt(max_area * double(h) * double(w) / double(wh * ww)));
      out_h = std::max<int64_t>(1, truncated(double(wh) * scale));
      out_w = std::max<int64_t>(1, truncated(double(ww) * scale));
    }
    const double smallest = min_area * double(h) * double(w);
    if (double(h * widest) < smallest) {  // no allowed window is wide enough: full height
      out_h = h, out_w = widest;
    } else if (double(w * tallest) < smallest) {  // full width
      out_h = tallest, out_w = w;
    }
    sizes[2 * i] = std::min(out_h, h);
    sizes[2 * i + 1] = std::min(out_w, w);
  }
  return out;
}

}  // namespace penstock
