// The discrete Fourier transform of real signals of any length, in double precision, for the
// spectrogram and power_spectrum kernels: an even length as a complex transform of half the
// length; iterative radix-2 for powers of two, Bluestein's chirp (through a power-of-two
// transform) for other lengths. A plan is built once per batch call and
// shared by the threads; each thread brings its own scratch.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

namespace penstock {

using cdouble = std::complex<double>;

// a * b without the library's checks for infinities and NaN (std::complex's operator* calls out to
// __muldc3, which dominates a transform's time)
inline cdouble cmul(cdouble a, cdouble b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// In-place forward transform of a power-of-two length.
class Radix2Fft {
 public:
  explicit Radix2Fft(int64_t n) : n_(n), twiddle_(n / 2), rev_(n) {
    for (int64_t k = 0; k < n / 2; ++k) twiddle_[k] = std::polar(1.0, -2 * M_PI * k / n);
    int bits = 0;
    while ((int64_t(1) << bits) < n) ++bits;
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      rev_[i] = r;
    }
  }

  void run(cdouble* x) const {
    for (int64_t i = 0; i < n_; ++i)
      if (i < rev_[i]) std::swap(x[i], x[rev_[i]]);
    for (int64_t len = 2; len <= n_; len <<= 1) {
      const int64_t half = len / 2, step = n_ / len;
      for (int64_t s = 0; s < n_; s += len)
        for (int64_t k = 0; k < half; ++k) {
          const cdouble t = cmul(twiddle_[k * step], x[s + k + half]);
          x[s + k + half] = x[s + k] - t;
          x[s + k] += t;
        }
    }
  }

  int64_t size() const { return n_; }

 private:
  int64_t n_;
  std::vector<cdouble> twiddle_;
  std::vector<int64_t> rev_;
};

inline bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place transform of any length: radix-2, or Bluestein's chirp through a radix-2 transform of a
// power of two >= 2n - 1 (x_k w_k convolved with conj(w), w_k = exp(-i pi k^2 / n)).
class ComplexDft {
 public:
  explicit ComplexDft(int64_t n) : n_(n), inner_(work_size(n)) {
    if (is_power_of_two(n)) return;
    const int64_t m = inner_.size();
    chirp_.resize(n);
    for (int64_t k = 0; k < n; ++k) chirp_[k] = std::polar(1.0, -M_PI * double((k * k) % (2 * n)) / n);
    kernel_.assign(m, cdouble(0));
    for (int64_t k = 0; k < n; ++k) kernel_[k] = std::conj(chirp_[k]);
    for (int64_t k = 1; k < n; ++k) kernel_[m - k] = std::conj(chirp_[k]);
    inner_.run(kernel_.data());
  }

  int64_t size() const { return n_; }
  // Complex values of scratch a thread needs for run() (none for powers of two).
  int64_t scratch_size() const { return chirp_.empty() ? 0 : inner_.size(); }

  void run(cdouble* x, cdouble* scratch) const {
    if (chirp_.empty()) {
      inner_.run(x);
      return;
    }
    const int64_t m = inner_.size();
    for (int64_t k = 0; k < n_; ++k) scratch[k] = cmul(x[k], chirp_[k]);
    for (int64_t k = n_; k < m; ++k) scratch[k] = 0;
    inner_.run(scratch);
    for (int64_t k = 0; k < m; ++k) scratch[k] = std::conj(cmul(scratch[k], kernel_[k]));  // inverse via conj
    inner_.run(scratch);
    const double inv = 1.0 / m;
    for (int64_t k = 0; k < n_; ++k) x[k] = cmul(std::conj(scratch[k]) * inv, chirp_[k]);
  }

 private:
  static int64_t work_size(int64_t n) {
    if (is_power_of_two(n)) return n;
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    return m;
  }

  int64_t n_;
  Radix2Fft inner_;
  std::vector<cdouble> chirp_, kernel_;
};

// Bins 0..n/2 of the transform of n real values: an even n as n/2 complex values (even samples
// real, odd ones imaginary), split afterwards; an odd n as n complex values.
class RealDft {
 public:
  explicit RealDft(int64_t n) : n_(n), half_(n % 2 == 0 && n >= 2 ? n / 2 : n) {
    if (packed()) {
      split_.resize(n / 2 + 1);
      for (int64_t k = 0; k <= n / 2; ++k) split_[k] = std::polar(1.0, -2 * M_PI * k / n);
    }
  }

  int64_t size() const { return n_; }
  int64_t bins() const { return n_ / 2 + 1; }
  // Complex values of scratch a thread needs for run().
  int64_t scratch_size() const { return half_.size() + half_.scratch_size(); }

  // `x`: n real values; writes bins() values to `out`.
  void run(const double* x, cdouble* out, cdouble* scratch) const {
    cdouble* z = scratch;
    cdouble* more = scratch + half_.size();
    if (!packed()) {
      for (int64_t k = 0; k < n_; ++k) z[k] = x[k];
      half_.run(z, more);
      for (int64_t k = 0; k < bins(); ++k) out[k] = z[k];
      return;
    }
    const int64_t h = n_ / 2;
    for (int64_t k = 0; k < h; ++k) z[k] = cdouble(x[2 * k], x[2 * k + 1]);
    half_.run(z, more);
    for (int64_t k = 0; k <= h; ++k) {
      const cdouble a = z[k % h], b = std::conj(z[(h - k) % h]);
      const cdouble even = 0.5 * (a + b), diff = a - b, odd(0.5 * diff.imag(), -0.5 * diff.real());  // -i/2 (a - b)
      out[k] = even + cmul(split_[k], odd);
    }
  }

 private:
  bool packed() const { return n_ % 2 == 0 && n_ >= 2; }

  int64_t n_;
  ComplexDft half_;
  std::vector<cdouble> split_;
};

}  // namespace penstock
