// noise.gaussian / noise.shot / noise.salt_and_pepper over a batch: one random stream per
// sample (seeded by Python from the operator's counter-based generator, so results do not depend
// on threads), outputs converted to the input type with rounding and saturation.
#include <cmath>

#include "engine/convert.h"
#include "engine/dtype.h"
#include "kernels/noise.h"

namespace penstock {
namespace {

// splitmix64: small, fast and good enough for noise.
struct SplitMix {
  uint64_t s;
  uint64_t operator()() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double((*this)() >> 11) * 0x1.0p-53; }
};

enum Kind { GAUSSIAN = 0, SHOT = 1, SALT_AND_PEPPER = 2 };

// Poisson draws: multiplication of uniforms for small means, else the transformed rejection
// method PTRS (Hormann 1993).
int64_t poisson(double lam, SplitMix& rng) {
  if (lam < 10) {
    double limit = std::exp(-lam), prod = rng.uniform();
    int64_t k = 0;
    while (prod > limit) {
      prod *= rng.uniform();
      ++k;
    }
    return k;
  }
  double slam = std::sqrt(lam), loglam = std::log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  while (true) {
    double u = rng.uniform() - 0.5, v = rng.uniform();
    double us = 0.5 - std::fabs(u);
    int64_t k = int64_t(std::floor((2 * a / us + b) * u + lam + 0.43));
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -lam + double(k) * loglam - std::lgamma(double(k) + 1))
      return k;
  }
}

template <typename T>
void noise_sample(int kind, const T* in, T* out, int64_t vol, int64_t channels, const double* p, SplitMix& rng) {
  if (kind == GAUSSIAN) {
    float mean = float(p[0]), std = float(p[1]);
    for (int64_t k = 0; k < vol; k += 2) {  // Box-Muller in float: two normals per draw
      float u1 = 1.0f - float(rng.uniform()), u2 = float(rng.uniform());
      float r = std * std::sqrt(-2.0f * std::log(u1));
      float angle = 6.2831853f * u2;
      out[k] = convert_sat<T>(float(in[k]) + mean + r * std::cos(angle));
      if (k + 1 < vol) out[k + 1] = convert_sat<T>(float(in[k + 1]) + mean + r * std::sin(angle));
    }
  } else if (kind == SHOT) {
    double factor = p[0];
    for (int64_t k = 0; k < vol; ++k) {
      double lam = std::max(0.0, double(in[k])) / factor;
      out[k] = convert_sat<T>(lam > 0 ? double(poisson(lam, rng)) * factor : 0.0);
    }
  } else {
    double prob = p[0], salt_ratio = p[1];
    T salt = convert_sat<T>(p[2]), pepper = convert_sat<T>(p[3]);
    for (int64_t k = 0; k < vol; k += channels) {
      bool hit = rng.uniform() < prob;
      bool is_salt = rng.uniform() < salt_ratio;
      for (int64_t c = 0; c < channels && k + c < vol; ++c) out[k + c] = hit ? (is_salt ? salt : pepper) : in[k + c];
    }
  }
}

}  // namespace

void noise(ThreadPool& pool, int kind, Array in, I64Array shapes, I64Array offsets, Array out, I64Array out_offsets,
           ArrayOf<uint64_t> seeds, ArrayOf<double> params, int64_t channels, int dtype) {
  BatchView src = make_batch_view(in, shapes, offsets, false);
  BatchView dst = make_batch_view(out, shapes, out_offsets, true);
  int64_t n = src.num_samples;
  if (seeds.shape(0) != n || params.ndim() != 2 || params.shape(0) != n || params.shape(1) != 4 || channels < 1)
    throw std::invalid_argument("noise: inconsistent argument sizes");
  const uint64_t* sd = seeds.data();
  const double* pr = params.data();
  pool.parallel_for(n, [&](int64_t i) {
    SplitMix rng{sd[i]};
    PENSTOCK_DISPATCH_NUMERIC(dtype, T, noise_sample<T>(kind, src.sample<T>(i), dst.sample<T>(i), src.volume(i),
                                                        channels, pr + 4 * i, rng));
  });
}

}  // namespace penstock
