// Band-limited resampling with a windowed sinc, as DALI 2.4's audio resampler does it (used by
// decoders.audio's sample_rate and by audio_resample): a Hann-windowed sinc of `lobes` zero
// crossings per side, tabulated at 64 points per lobe and read with linear interpolation, applied
// at the input rate (no extra low-pass when downsampling). Arithmetic in float, output positions
// advanced in blocks of 256 from a double start; one interpolation fraction serves all taps of an
// output (DALI computes it per tap: the values agree to about 1e-6 of full scale). Equal rates copy
// the samples; ratios whose outputs share interpolation points reuse their weights.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/convert.h"

namespace penstock {

// Integer samples read and written as fractions of full scale, as DALI's audio operators do:
// signed x / max and round(f * max); unsigned ones span [-1, 1] too, x * 2 / max - 1 and
// round((f + 1) * max / 2); saturated. Floating-point samples stay as they are.
template <typename T>
inline float to_unit(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<float>(v) * (1.0f / static_cast<float>(std::numeric_limits<T>::max()));
  } else {
    return static_cast<float>(v) * (2.0f / static_cast<float>(std::numeric_limits<T>::max())) - 1.0f;
  }
}

template <typename T>
inline T from_unit(float f) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(f);
  } else if constexpr (std::is_signed_v<T>) {
    return convert_sat<T>(f * static_cast<float>(std::numeric_limits<T>::max()));
  } else {
    return convert_sat<T>((f + 1.0f) * (0.5f * static_cast<float>(std::numeric_limits<T>::max())));
  }
}

// quality 0..100 -> zero crossings per side of the sinc (3 at 0, 16 at 50, 64 at 100)
inline int resampling_lobes(double quality) {
  return static_cast<int>(std::round(0.007 * quality * quality - 0.09 * quality + 3));
}

// ceil(n * out_rate / in_rate): the length a resampled signal gets
inline int64_t resampled_length(int64_t n, double in_rate, double out_rate) {
  return static_cast<int64_t>(std::ceil(n * out_rate / in_rate));
}

class SincResampler {
 public:
  // The table holds 32 entries per unit of x (coeffs = 64 per lobe over [-lobes, lobes]), so the taps
  // of one output, one unit apart, read entries 32 apart with the same interpolation fraction.
  static constexpr int kPerUnit = 32;

  explicit SincResampler(int lobes) : lobes_(lobes) {
    const int coeffs = lobes * 2 * kPerUnit + 1;
    const float scale = 2.0f * lobes / (coeffs - 1);
    const float envelope_scale = 2.0f / coeffs;
    // a zero on each side (reads at the edges interpolate to 0), and room for one more unit
    std::vector<float> lookup(coeffs + 2 + kPerUnit, 0.0f);
    const int center = static_cast<int>((coeffs - 1) * 0.5f);
    for (int i = 0; i < coeffs; ++i) {
      const float x = static_cast<float>(i - center);
      const double y = x * scale;
      const double sinc = y != 0 ? std::sin(y * M_PI) / (y * M_PI) : 1.0;
      const double hann = 0.5 * (1 + std::cos(static_cast<double>(x * envelope_scale) * M_PI));
      lookup[i + 1] = static_cast<float>(sinc * hann);
    }
    // by phase: entry p + kPerUnit * u at [p][u], so the taps of one output read contiguous values
    table_size_ = static_cast<int64_t>(lookup.size());
    units_ = table_size_ / kPerUnit + 1;
    value_.assign(kPerUnit * units_, 0.0f);
    slope_.assign(kPerUnit * units_, 0.0f);
    for (int64_t i = 0; i + 1 < table_size_; ++i) {
      value_[(i % kPerUnit) * units_ + i / kPerUnit] = lookup[i];
      slope_[(i % kPerUnit) * units_ + i / kPerUnit] = lookup[i + 1] - lookup[i];
    }
    center_ = static_cast<float>(center + 1);
  }

  // Writes n unit-range values as elements of the output type (from_unit).
  using StoreUnit = void (*)(const float* unit, int64_t n, void* out);
  template <typename Out>
  static void store_unit(const float* unit, int64_t n, void* out) {
    auto* o = static_cast<Out*>(out);
    for (int64_t i = 0; i < n; ++i) o[i] = from_unit<Out>(unit[i]);
  }

  // out[0, out_len) from in[0, n_in) (interleaved channels), both rates in samples per second.
  // Equal rates are filtered too, as DALI's audio_resample does (the decoder skips the call).
  template <typename Out, typename In>
  void resample(Out* out, int64_t out_len, double out_rate, const In* in, int64_t n_in, double in_rate,
                int channels) const {
    resample_into(out, sizeof(Out), &store_unit<Out>, out_len, out_rate, in, n_in, in_rate, channels);
  }

  // resample() with the output's type given by its element size and `store`: the filtering is
  // compiled once per input type, not once per pair of types. Positions advance in float from a
  // double start every 256 outputs, as in DALI; each block's values are computed, then stored.
  // Equal rates put every output on an input sample, where the weights are the sinc's peak (1)
  // and its zeros (below 1e-16): the filter is the identity to float precision, and the samples
  // are copied.
  template <typename In>
  void resample_into(void* out, int64_t out_elem_size, StoreUnit store, int64_t out_len, double out_rate,
                     const In* in, int64_t n_in, double in_rate, int channels) const {
    constexpr int64_t kBlock = 256;
    const double scale = in_rate / out_rate;
    const float fscale = static_cast<float>(scale);
    std::vector<float> unit(kBlock * channels);
    WeightsCache cache(2 * lobes_ + 1);
    // Outputs every half input sample or a multiple of it (16 -> 8 kHz, 8 -> 16 kHz, 48 -> 16 kHz)
    // share one or two interpolation points, whose weights are kept; other ratios' points do not
    // repeat, and mono outputs interpolate the weights as they read them.
    const bool repeating = std::floor(2 * scale) == 2 * scale;
    for (int64_t block = 0; block < out_len; block += kBlock) {
      const int64_t block_end = std::min(block + kBlock, out_len);
      if (in_rate == out_rate) {
        for (int64_t o = block; o < block_end; ++o)
          for (int c = 0; c < channels; ++c)
            unit[(o - block) * channels + c] = o < n_in ? to_unit(in[o * channels + c]) : 0.0f;
        store(unit.data(), (block_end - block) * channels, static_cast<char*>(out) + block * channels * out_elem_size);
        continue;
      }
      const double start = block * scale;
      const int64_t base = static_cast<int64_t>(std::floor(start));
      float pos = static_cast<float>(start - base);  // input position relative to `base`
      for (int64_t o = block; o < block_end; ++o, pos += fscale) {
        int64_t centre = static_cast<int64_t>(pos);  // ceil(pos), pos >= 0, without a library call
        if (static_cast<float>(centre) < pos) ++centre;
        const int64_t i0 = std::max<int64_t>(centre - lobes_, -base);
        const int64_t taps = std::max<int64_t>(std::min<int64_t>(centre + lobes_, n_in - base) - i0, 0);
        const In* x = in + (base + i0) * channels;
        float* acc = unit.data() + (o - block) * channels;
        const Point point = point_of(static_cast<float>(i0) - pos, taps);
        if (channels == 1 && !repeating) {
          *acc = interpolating_dot(x, point);
          continue;
        }
        const float* weights = cache.lookup(point, *this);
        if (channels == 1) {
          *acc = dot(x, weights, taps);
          continue;
        }
        std::fill(acc, acc + channels, 0.0f);
        for (int64_t t = 0; t < taps; ++t)
          for (int c = 0; c < channels; ++c) acc[c] += to_unit(x[t * channels + c]) * weights[t];
      }
      store(unit.data(), (block_end - block) * channels, static_cast<char*>(out) + block * channels * out_elem_size);
    }
  }

 private:
  // Where the taps of an output read the table: from entry `first` on, every kPerUnit-th, with the
  // interpolation fraction `di`.
  struct Point {
    int64_t first, taps;
    float di;
    bool operator==(const Point& o) const { return first == o.first && taps == o.taps && di == o.di; }
  };

  // Taps x0, x0 + 1, ...: x0 >= -lobes, so the table position is positive and truncation is floor.
  Point point_of(float x0, int64_t taps) const {
    const float fi = x0 * kPerUnit + center_;
    const int64_t first = static_cast<int64_t>(fi);
    return {first, taps, fi - static_cast<float>(first)};
  }

  bool inside(const Point& p) const { return p.first >= 0 && p.first + (p.taps - 1) * kPerUnit + 1 < table_size_; }
  // the table's values and slopes at the point's taps, contiguous
  const float* values(const Point& p) const { return value_.data() + by_phase(p.first); }
  const float* slopes(const Point& p) const { return slope_.data() + by_phase(p.first); }
  int64_t by_phase(int64_t entry) const { return (entry % kPerUnit) * units_ + entry / kPerUnit; }

  // The weights of the last two distinct points.
  struct WeightsCache {
    explicit WeightsCache(int64_t taps) : weights{std::vector<float>(taps), std::vector<float>(taps)} {}
    Point points[2] = {{-1, -1, -1}, {-1, -1, -1}};
    std::vector<float> weights[2];
    int older = 0;  // the entry the next new point replaces

    const float* lookup(const Point& p, const SincResampler& table) {
      for (int e = 0; e < 2; ++e)
        if (points[e] == p) return weights[e].data();
      return fill(p, table);
    }

    // The table read with linear interpolation (outside the window: zeros).
    const float* fill(const Point& p, const SincResampler& table) {
      const int e = older;
      older ^= 1;
      points[e] = p;
      float* w = weights[e].data();
      if (!table.inside(p)) {
        std::fill(w, w + p.taps, 0.0f);
        return w;
      }
      const float* value = table.values(p);
      const float* slope = table.slopes(p);
      for (int64_t t = 0; t < p.taps; ++t) w[t] = value[t] + p.di * slope[t];
      return w;
    }
  };

  // dot() with the weights interpolated as they are read (the same values fill() gives)
  template <typename In>
  float interpolating_dot(const In* x, const Point& p) const {
    if (!inside(p)) return 0.0f;
    const float* value = values(p);
    const float* slope = slopes(p);
    float lane[4] = {0, 0, 0, 0};
    int64_t t = 0;
    for (; t + 3 < p.taps; t += 4)
      for (int k = 0; k < 4; ++k) lane[k] += to_unit(x[t + k]) * (value[t + k] + p.di * slope[t + k]);
    float f = (lane[0] + lane[2]) + (lane[1] + lane[3]);
    for (; t < p.taps; ++t) f += to_unit(x[t]) * (value[t] + p.di * slope[t]);
    return f;
  }

  // Four running sums over taps 0, 4, ... then the rest one by one (DALI's vector order).
  template <typename In>
  static float dot(const In* x, const float* w, int64_t taps) {
    float lane[4] = {0, 0, 0, 0};
    int64_t t = 0;
    for (; t + 3 < taps; t += 4)
      for (int k = 0; k < 4; ++k) lane[k] += to_unit(x[t + k]) * w[t + k];
    float f = (lane[0] + lane[2]) + (lane[1] + lane[3]);
    for (; t < taps; ++t) f += to_unit(x[t]) * w[t];
    return f;
  }

  int lobes_;
  int64_t table_size_ = 0, units_ = 0;
  std::vector<float> value_, slope_;  // the table's values and slopes by phase
  float center_ = 0;
};

}  // namespace penstock
