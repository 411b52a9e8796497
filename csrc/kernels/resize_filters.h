// Resampling filters and per-axis tap tables for the separable resize.
// Convention: output pixel j of an axis samples the source at
//   c = roi_start + (j + 0.5) * (roi_end - roi_start) / out - 0.5   (pixel centres at integers);
// sources outside [0, in) replicate the edge pixel. When downscaling with antialias the filter is
// stretched by the scale factor (a triangle of radius `scale` for linear).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace penstock {

// DALIInterpType codes.
enum InterpType : int {
  kInterpNN = 0, kInterpLinear = 1, kInterpCubic = 2, kInterpLanczos3 = 3,
  kInterpTriangular = 4, kInterpGaussian = 5,
};

// Taps of one axis: output j reads source indices start[j] .. start[j] + taps - 1 (all inside
// the source) with weights[j * taps + k]; the weights of each output sum to 1.
struct AxisFilter {
  int64_t in_size = 0, out_size = 0, taps = 0;
  std::vector<int32_t> start;
  std::vector<float> weights;
};

inline double filter_radius(int type) {
  switch (type) {
    case kInterpLinear: case kInterpTriangular: return 1.0;
    case kInterpCubic: return 2.0;
    case kInterpLanczos3: return 3.0;
    case kInterpGaussian: return 1.5;  // exp(-4 d^2) is below 1e-3 beyond
    default: throw std::invalid_argument("unknown interpolation type " + std::to_string(type));
  }
}

// Filter value at distance d (in filter units: source pixels divided by the stretch).
inline double filter_value(int type, double d) {
  double a = std::fabs(d);
  switch (type) {
    case kInterpLinear: case kInterpTriangular:
      return a < 1 ? 1 - a : 0;
    case kInterpCubic: {  // Keys, a = -0.5
      if (a < 1) return (1.5 * a - 2.5) * a * a + 1;
      if (a < 2) return ((-0.5 * a + 2.5) * a - 4) * a + 2;
      return 0;
    }
    case kInterpLanczos3: {
      if (a >= 3) return 0;
      if (a < 1e-9) return 1;
      double x = M_PI * a;
      return 3 * std::sin(x) * std::sin(x / 3) / (x * x);
    }
    case kInterpGaussian:  // sigma = radius / (2 sqrt 2) with radius 1 in filter units
      return a < 1.5 ? std::exp(-4 * a * a) : 0;
    default:
      return 0;
  }
}

// Builds the taps of one axis. `min_filter` applies when downscaling (|roi| > out),
// `mag_filter` otherwise.
inline void make_axis_filter(AxisFilter& f, int64_t in_size, int64_t out_size, double roi_start,
                             double roi_end, int min_filter, int mag_filter, bool antialias) {
  f.in_size = in_size;
  f.out_size = out_size;
  f.start.assign(out_size, 0);
  if (out_size == 0 || in_size == 0) {
    f.taps = 0;
    f.weights.clear();
    return;
  }
  double step = (roi_end - roi_start) / double(out_size);  // negative: flipped
  double scale = std::fabs(step);
  int type = scale > 1 ? min_filter : mag_filter;
  if (type == kInterpNN) {
    f.taps = 1;
    f.weights.assign(out_size, 1.0f);
    for (int64_t j = 0; j < out_size; ++j) {
      // Exact ties such as 7.5 * (120/50) = 18 come out as 17.999... in floating point; the
      // epsilon gives them the index exact arithmetic (and DALI) gives.
      double x = std::floor(roi_start + (j + 0.5) * step + 1e-7);
      f.start[j] = int32_t(std::clamp<double>(x, 0, double(in_size - 1)));
    }
    return;
  }
  bool stretch_always = type == kInterpTriangular || type == kInterpGaussian;
  double stretch = scale > 1 && (antialias || stretch_always) ? scale : 1.0;
  double radius = filter_radius(type) * stretch;
  int64_t max_taps = std::min<int64_t>(in_size, int64_t(std::floor(2 * radius)) + 2);
  std::vector<double> acc(max_taps);
  std::vector<int32_t> first(out_size), count(out_size);
  std::vector<double> tmp(size_t(out_size) * max_taps, 0.0);
  int64_t taps = 1;
  for (int64_t j = 0; j < out_size; ++j) {
    double c = roi_start + (j + 0.5) * step - 0.5;
    int64_t lo = int64_t(std::ceil(c - radius)), hi = int64_t(std::floor(c + radius));
    // clamped source range this output touches
    int64_t clo = std::clamp<int64_t>(lo, 0, in_size - 1), chi = std::clamp<int64_t>(hi, 0, in_size - 1);
    std::fill(acc.begin(), acc.end(), 0.0);
    int64_t n = std::min<int64_t>(chi - clo + 1, max_taps);
    double sum = 0;
    for (int64_t t = lo; t <= hi; ++t) {
      double w = filter_value(type, (t - c) / stretch);
      if (w == 0) continue;
      int64_t idx = std::clamp<int64_t>(t, clo, clo + n - 1);
      acc[idx - clo] += w;
      sum += w;
    }
    if (sum == 0) {  // degenerate: take the nearest pixel
      std::fill(acc.begin(), acc.end(), 0.0);
      acc[std::clamp<int64_t>(int64_t(std::floor(c + 0.5)), clo, clo + n - 1) - clo] = 1;
      sum = 1;
    }
    int64_t b = 0, e = n;  // trim zero taps at both ends
    while (b < e - 1 && acc[b] == 0) ++b;
    while (e > b + 1 && acc[e - 1] == 0) --e;
    first[j] = int32_t(clo + b);
    count[j] = int32_t(e - b);
    for (int64_t k = b; k < e; ++k) tmp[j * max_taps + (k - b)] = acc[k] / sum;
    taps = std::max<int64_t>(taps, e - b);
  }
  f.taps = taps;
  f.weights.assign(size_t(out_size) * taps, 0.0f);
  for (int64_t j = 0; j < out_size; ++j) {
    // keep all taps inside the source: shift the window left at the far edge
    int64_t s = std::min<int64_t>(first[j], in_size - taps), shift = first[j] - s;
    f.start[j] = int32_t(s);
    for (int64_t k = 0; k < count[j]; ++k) f.weights[j * taps + shift + k] = float(tmp[j * max_taps + k]);
  }
}

}  // namespace penstock
