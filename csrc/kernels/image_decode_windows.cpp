#include "kernels/image_decode_windows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace penstock {
namespace {

// float64 -> int64 as numpy's astype does on x86: truncation, and INT64_MIN where it does not fit
int64_t truncated(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

I64Array random_crop_windows(NumpyBitGenerator& bits, const I64Array& hw, int64_t attempts, double min_area,
                             double max_area, double min_ratio, double max_ratio, double log_min_ratio,
                             double log_max_ratio) {
  if (hw.ndim() != 2 || hw.shape(1) < 2) throw std::invalid_argument("random_crop_windows: hw must be [N, 2] or wider");
  const int64_t row = hw.shape(1);
  if (attempts < 0) throw std::invalid_argument("random_crop_windows: attempts must not be negative");
  const int64_t n = hw.shape(0);
  // numpy's uniform(low, high): low + (high - low) * next_double, in C order; every draw is made (the
  // window's position draws come after them all), the ratio's exp only for the attempts tried (most
  // samples take the first or second of 10)
  std::vector<double> area_draws(n * attempts), log_ratio_draws(n * attempts);
  for (double& d : area_draws) d = min_area + (max_area - min_area) * next_double(bits);
  for (double& d : log_ratio_draws) d = log_min_ratio + (log_max_ratio - log_min_ratio) * next_double(bits);
  I64Array out = I64Array::empty({n, 4});
  int64_t* windows = out.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t h = hw.data()[row * i], w = hw.data()[row * i + 1];
    const double full = double(h * w);
    int64_t out_h = 1, out_w = 1;
    bool found = false;
    for (int64_t a = 0; a < attempts && !found; ++a) {
      const double area = area_draws[i * attempts + a] * full, ratio = std::exp(log_ratio_draws[i * attempts + a]);
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
    windows[4 * i + 2] = std::min(out_h, h);
    windows[4 * i + 3] = std::min(out_w, w);
  }
  // numpy's integers(0, extent + 1), all the y, then all the x
  for (int axis = 0; axis < 2; ++axis) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t extent = hw.data()[row * i + axis] - windows[4 * i + 2 + axis];
      if (extent < 0) throw std::invalid_argument("random_crop_windows: a window larger than its image");
      windows[4 * i + axis] = int64_t(bounded_draw(bits, uint64_t(extent)));
    }
  }
  return out;
}

I64Array image_gather_descriptors(const ArrayOf<uint64_t>& pointers, const I64Array& pitches, const I64Array& windows,
                                  const I64Array& channels, const I64Array& reverse, const I64Array& dst_offsets) {
  const int64_t n = pointers.ndim() == 1 ? pointers.shape(0) : -1;
  if (n < 0 || windows.ndim() != 2 || windows.shape(0) != n || windows.shape(1) != 4)
    throw std::invalid_argument("image_gather_descriptors: pointers [N] and windows [N, 4]");
  for (const I64Array* column : {&pitches, &channels, &reverse, &dst_offsets})
    if (column->ndim() != 1 || column->shape(0) != n)
      throw std::invalid_argument("image_gather_descriptors: pitches, channels, reverse and dst_offsets must be [N]");
  I64Array out = I64Array::empty({n, 10});
  int64_t* d = out.mutable_data();
  const int64_t* w = windows.data();
  for (int64_t k = 0; k < n; ++k, d += 10, w += 4) {
    const int64_t c = channels.data()[k];
    d[0] = int64_t(pointers.data()[k]);
    d[1] = pitches.data()[k];
    d[2] = w[0], d[3] = w[1];
    d[4] = dst_offsets.data()[k];
    d[5] = w[3];
    d[6] = w[2] * w[3] * c;
    d[7] = c;
    d[8] = reverse.data()[k];
    d[9] = 0;
  }
  return out;
}

}  // namespace penstock
