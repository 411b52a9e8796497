// Displacement effects on HWC images (water, sphere, jitter): output pixel (x, y) samples the
// input at a displaced point, by nearest neighbour or bilinearly; points outside the image take
// the fill value; a sample whose mask is 0 is copied. The maps are computed in float.
//
//   water:  p = (x + ax * sin(fx * y + phx), y + ay * cos(fy * x + phy)), pixel i spanning [i, i + 1)
//   sphere: p = c + |q - c| / r * (q - c), q = (x + 0.5, y + 0.5), c = (W / 2, H / 2),
//           r = max(W div 2, H div 2)
//   jitter: p = q + (dx, dy), integer offsets in [-degree div 2, degree div 2] from a hash of
//           (seed, pixel), so that the GPU draws the same offsets
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/displacement.h"
#include "kernels/fast_convert.h"

namespace penstock {
namespace {

using F64Array = ArrayOf<double>;
using I32Array = ArrayOf<int32_t>;

// splitmix64's finalizer: the jitter offsets of pixel `index` of a sample with `seed`
// (csrc/cuda/displacement.cu draws the same)
inline uint64_t mix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline void displaced_point(int kind, const double* p, int64_t x, int64_t y, int64_t w, int64_t h, float* px,
                            float* py) {
  if (kind == 0) {  // water
    *px = float(x) + float(p[0]) * std::sin(float(p[2]) * float(y) + float(p[4]));
    *py = float(y) + float(p[1]) * std::cos(float(p[3]) * float(x) + float(p[5]));
  } else if (kind == 1) {  // sphere
    float cx = float(w) / 2.f, cy = float(h) / 2.f, r = float(std::max(w / 2, h / 2));
    float u = float(x) + 0.5f - cx, v = float(y) + 0.5f - cy;
    float s = std::sqrt(u * u + v * v) / r;
    *px = cx + s * u;
    *py = cy + s * v;
  } else {  // jitter
    uint64_t degree = uint64_t(p[0]), bits = mix(uint64_t(p[1]), uint64_t(y * w + x));
    int64_t half = int64_t(degree / 2), span = 2 * half + 1;
    *px = float(x) + 0.5f + float(int64_t(bits % uint64_t(span)) - half);
    *py = float(y) + 0.5f + float(int64_t((bits >> 32) % uint64_t(span)) - half);
  }
}

template <typename T>
void displace_sample(const T* in, T* out, int64_t h, int64_t w, int64_t c, int kind, const double* p, bool linear,
                     float fill) {
  const float fill_value = fill;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      float px, py;
      displaced_point(kind, p, x, y, w, h, &px, &py);
      T* dst = out + (y * w + x) * c;
      if (!linear) {
        int64_t ix = int64_t(std::floor(px)), iy = int64_t(std::floor(py));
        bool inside = px >= 0.f && py >= 0.f && ix < w && iy < h;
        for (int64_t ch = 0; ch < c; ++ch)
          dst[ch] = inside ? in[(iy * w + ix) * c + ch] : round_sat<T>(fill_value);
        continue;
      }
      float fx = px - 0.5f, fy = py - 0.5f;
      float x0f = std::floor(fx), y0f = std::floor(fy);
      float wx = fx - x0f, wy = fy - y0f;
      int64_t x0 = int64_t(x0f), y0 = int64_t(y0f);
      for (int64_t ch = 0; ch < c; ++ch) {
        auto at = [&](int64_t xx, int64_t yy) {
          return xx >= 0 && yy >= 0 && xx < w && yy < h ? float(in[(yy * w + xx) * c + ch]) : fill_value;
        };
        float top = at(x0, y0) + wx * (at(x0 + 1, y0) - at(x0, y0));
        float bottom = at(x0, y0 + 1) + wx * (at(x0 + 1, y0 + 1) - at(x0, y0 + 1));
        dst[ch] = round_sat<T>(top + wy * (bottom - top));
      }
    }
}

}  // namespace

// shapes [N, 3] (H, W, C); params [N, 6] (water: ampl_x, ampl_y, freq_x, freq_y, phase_x, phase_y;
// jitter: degree, seed); masks [N] (0: copy the sample).
void displacement(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int type, Array dst,
                  I64Array dst_offsets, int kind, F64Array params, I32Array masks, bool linear, double fill) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  const int64_t n = in.num_samples;
  if (in.ndim != 3) throw std::invalid_argument("displacement: samples must be HWC");
  if (params.ndim() != 2 || params.shape(0) != n || params.shape(1) != 6 || masks.size() != n)
    throw std::invalid_argument("displacement: params must be [N, 6] and masks [N]");
  if (kind < 0 || kind > 2) throw std::invalid_argument("displacement: unknown kind");
  const double* p = params.data();
  const int32_t* m = masks.data();
  auto run = [&](auto* type_tag) {
    using T = std::remove_pointer_t<decltype(type_tag)>;
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t* s = in.shape(i);
      if (m[i] == 0) {
        std::copy(in.sample<T>(i), in.sample<T>(i) + in.volume(i), out.sample<T>(i));
        return;
      }
      displace_sample(in.sample<T>(i), out.sample<T>(i), s[0], s[1], s[2], kind, p + i * 6, linear, float(fill));
    });
  };
  if (type == int(DType::UINT8)) run(static_cast<uint8_t*>(nullptr));
  else if (type == int(DType::FLOAT)) run(static_cast<float*>(nullptr));
  else throw std::invalid_argument("displacement: supported types are UINT8 and FLOAT, got " + dtype_name(type));
}

}  // namespace penstock
