// The discrete Fourier transform of real signals of any length, in double precision, for the
// spectrogram and power_spectrum kernels, kLanes signals at a time: the values are stored
// lane-minor (value k of signal l at [k * kLanes + l]), so every butterfly is a loop over lanes
// that compiles to vector instructions (the kernels pick an AVX2 build at load time). An even
// length runs as a complex transform of half the length; iterative radix-2 for powers of two,
// Bluestein's chirp (through a power-of-two transform) for other lengths. A plan is built once per
// batch call and shared by the threads; each thread brings its own scratch.
#pragma once
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/hot_loop.h"

namespace penstock {

// Signals per transform call: 8 doubles are two AVX2 registers per operation, and the working set
// of a 512-point real transform (256 complex values x 8 lanes) stays in the L1 cache.
constexpr int64_t kLanes = 8;

// In-place forward transforms of a power-of-two length, kLanes at once (real and imaginary parts
// apart, lane-minor).
class LaneRadix2 {
 public:
  explicit LaneRadix2(int64_t n) : n_(n), cos_(n / 2), sin_(n / 2), rev_(n) {
    for (int64_t k = 0; k < n / 2; ++k) {
      const std::complex<double> w = std::polar(1.0, -2 * M_PI * k / n);
      cos_[k] = w.real();
      sin_[k] = w.imag();
    }
    int bits = 0;
    while ((int64_t(1) << bits) < n) ++bits;
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      rev_[i] = r;
    }
  }

  int64_t size() const { return n_; }

  PENSTOCK_HOT_LOOP void run(double* re, double* im) const {
    for (int64_t i = 0; i < n_; ++i)
      if (i < rev_[i]) {
        swap_lanes(re + i * kLanes, re + rev_[i] * kLanes);
        swap_lanes(im + i * kLanes, im + rev_[i] * kLanes);
      }
    for (int64_t len = 2; len <= n_; len <<= 1) {
      const int64_t half = len / 2, step = n_ / len;
      for (int64_t s = 0; s < n_; s += len)
        for (int64_t k = 0; k < half; ++k)
          butterfly(re + (s + k) * kLanes, im + (s + k) * kLanes, re + (s + k + half) * kLanes,
                    im + (s + k + half) * kLanes, cos_[k * step], sin_[k * step]);
    }
  }

 private:
  static void swap_lanes(double* a, double* b) {
    double t[kLanes];
    std::memcpy(t, a, sizeof t);
    std::memcpy(a, b, sizeof t);
    std::memcpy(b, t, sizeof t);
  }

  // (a, b) <- (a + w b, a - w b) in every lane
  static void butterfly(double* __restrict ar, double* __restrict ai, double* __restrict br, double* __restrict bi,
                        double wr, double wi) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const double tr = wr * br[l] - wi * bi[l], ti = wr * bi[l] + wi * br[l];
      br[l] = ar[l] - tr;
      bi[l] = ai[l] - ti;
      ar[l] += tr;
      ai[l] += ti;
    }
  }

  int64_t n_;
  std::vector<double> cos_, sin_;
  std::vector<int64_t> rev_;
};

inline bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place transforms of any length: radix-2, or Bluestein's chirp through a radix-2 transform of
// a power of two >= 2n - 1 (x_k w_k convolved with conj(w), w_k = exp(-i pi k^2 / n)).
class LaneComplexDft {
 public:
  explicit LaneComplexDft(int64_t n) : n_(n), inner_(work_size(n)) {
    if (is_power_of_two(n)) return;
    const int64_t m = inner_.size();
    chirp_.resize(n);
    for (int64_t k = 0; k < n; ++k) chirp_[k] = std::polar(1.0, -M_PI * double((k * k) % (2 * n)) / n);
    // the transform of the kernel conj(w), in every lane (it multiplies lane-wise)
    std::vector<double> re(m * kLanes, 0.0), im(m * kLanes, 0.0);
    auto put = [&](int64_t at, std::complex<double> v) {
      for (int64_t l = 0; l < kLanes; ++l) {
        re[at * kLanes + l] = v.real();
        im[at * kLanes + l] = v.imag();
      }
    };
    for (int64_t k = 0; k < n; ++k) put(k, std::conj(chirp_[k]));
    for (int64_t k = 1; k < n; ++k) put(m - k, std::conj(chirp_[k]));
    inner_.run(re.data(), im.data());
    kernel_.resize(m);
    for (int64_t k = 0; k < m; ++k) kernel_[k] = {re[k * kLanes], im[k * kLanes]};
  }

  int64_t size() const { return n_; }
  // Doubles of scratch a thread needs for run() (none for powers of two).
  int64_t scratch_size() const { return chirp_.empty() ? 0 : 2 * inner_.size() * kLanes; }

  PENSTOCK_HOT_LOOP void run(double* re, double* im, double* scratch) const {
    if (chirp_.empty()) {
      inner_.run(re, im);
      return;
    }
    const int64_t m = inner_.size();
    double* sr = scratch;
    double* si = scratch + m * kLanes;
    for (int64_t k = 0; k < n_; ++k) multiply(re + k * kLanes, im + k * kLanes, chirp_[k], sr + k * kLanes,
                                              si + k * kLanes, kNone);
    std::fill(sr + n_ * kLanes, sr + m * kLanes, 0.0);
    std::fill(si + n_ * kLanes, si + m * kLanes, 0.0);
    inner_.run(sr, si);
    // the inverse transform as the conjugate of the forward one of the conjugate
    for (int64_t k = 0; k < m; ++k) multiply(sr + k * kLanes, si + k * kLanes, kernel_[k], sr + k * kLanes,
                                             si + k * kLanes, kOutput);
    inner_.run(sr, si);
    const double inv = 1.0 / m;
    for (int64_t k = 0; k < n_; ++k) multiply(sr + k * kLanes, si + k * kLanes, chirp_[k] * inv, re + k * kLanes,
                                              im + k * kLanes, kInput);
  }

 private:
  static int64_t work_size(int64_t n) {
    if (is_power_of_two(n)) return n;
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    return m;
  }

  enum Conjugate { kNone, kInput, kOutput };

  // out = x * w in every lane, or conj(x) * w, or conj(x * w)
  static void multiply(const double* xr, const double* xi, std::complex<double> w, double* outr, double* outi,
                       Conjugate which) {
    const double wr = w.real(), wi = w.imag();
    const double in_sign = which == kInput ? -1.0 : 1.0, out_sign = which == kOutput ? -1.0 : 1.0;
    for (int64_t l = 0; l < kLanes; ++l) {
      const double a = xr[l], b = in_sign * xi[l];
      outr[l] = a * wr - b * wi;
      outi[l] = out_sign * (a * wi + b * wr);
    }
  }

  int64_t n_;
  LaneRadix2 inner_;
  std::vector<std::complex<double>> chirp_, kernel_;
};

// Bins 0..n/2 of the transforms of kLanes signals of n real values: an even n as n/2 complex
// values (even samples real, odd ones imaginary), split afterwards; an odd n as n complex values.
class LaneRealDft {
 public:
  explicit LaneRealDft(int64_t n) : n_(n), half_(packed(n) ? n / 2 : n) {
    if (packed(n)) {
      split_cos_.resize(n / 2 + 1);
      split_sin_.resize(n / 2 + 1);
      for (int64_t k = 0; k <= n / 2; ++k) {
        split_cos_[k] = std::cos(-2 * M_PI * k / n);
        split_sin_[k] = std::sin(-2 * M_PI * k / n);
      }
    }
  }

  int64_t size() const { return n_; }
  int64_t bins() const { return n_ / 2 + 1; }
  // Doubles of scratch a thread needs for power().
  int64_t scratch_size() const { return 2 * half_.size() * kLanes + half_.scratch_size(); }
  // Zeroes the inputs in `scratch` (the values load() leaves out are zero padding).
  void clear(double* scratch) const { std::fill(scratch, scratch + 2 * half_.size() * kLanes, 0.0); }

  // Lane l's signal: x[0], x[stride], ... (count <= n values), times window[t] when given.
  void load(double* scratch, int64_t l, const float* x, int64_t stride, int64_t count, const double* window) const {
    const int64_t m = half_.size();
    if (!packed(n_)) {
      for (int64_t t = 0; t < count; ++t) scratch[t * kLanes + l] = x[t * stride] * (window ? window[t] : 1.0);
      return;
    }
    double* re = scratch + l;
    double* im = scratch + m * kLanes + l;
    int64_t t = 0;
    for (; t + 1 < count; t += 2) {
      re[(t >> 1) * kLanes] = x[t * stride] * (window ? window[t] : 1.0);
      im[(t >> 1) * kLanes] = x[(t + 1) * stride] * (window ? window[t + 1] : 1.0);
    }
    if (t < count) re[(t >> 1) * kLanes] = x[t * stride] * (window ? window[t] : 1.0);
  }

  // The power (power_kind 2) or magnitude of every bin of the kLanes signals load()ed into
  // `scratch`, lane-minor into `out` [bins][kLanes].
  PENSTOCK_HOT_LOOP void power(double* scratch, int power_kind, double* out) const {
    const int64_t m = half_.size();
    double* re = scratch;
    double* im = scratch + m * kLanes;
    half_.run(re, im, scratch + 2 * m * kLanes);
    if (!packed(n_)) {
      for (int64_t k = 0; k < bins(); ++k) magnitude(re + k * kLanes, im + k * kLanes, power_kind, out + k * kLanes);
      return;
    }
    // bin k from z[k] and conj(z[h - k]): even part + w^k times odd part
    const int64_t h = m;
    for (int64_t k = 0; k <= h; ++k) {
      const double* ar = re + (k % h) * kLanes;
      const double* ai = im + (k % h) * kLanes;
      const double* br = re + ((h - k) % h) * kLanes;
      const double* bi = im + ((h - k) % h) * kLanes;
      const double wr = split_cos_[k], wi = split_sin_[k];
      double* o = out + k * kLanes;
      for (int64_t l = 0; l < kLanes; ++l) {
        // a = z[k], b = conj(z[h-k]); even = (a + b) / 2, odd = -i (a - b) / 2
        const double er = 0.5 * (ar[l] + br[l]), ei = 0.5 * (ai[l] - bi[l]);
        const double odr = 0.5 * (ai[l] + bi[l]), odi = -0.5 * (ar[l] - br[l]);
        const double xr = er + (wr * odr - wi * odi), xi = ei + (wr * odi + wi * odr);
        const double p = xr * xr + xi * xi;
        o[l] = power_kind == 2 ? p : std::sqrt(p);
      }
    }
  }

 private:
  static bool packed(int64_t n) { return n % 2 == 0 && n >= 2; }

  static void magnitude(const double* re, const double* im, int power_kind, double* out) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const double p = re[l] * re[l] + im[l] * im[l];
      out[l] = power_kind == 2 ? p : std::sqrt(p);
    }
  }

  int64_t n_;
  LaneComplexDft half_;
  std::vector<double> split_cos_, split_sin_;
};

}  // namespace penstock
