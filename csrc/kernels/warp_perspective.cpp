// Perspective warp and remap of (frames, H, W, C) images.
//
// warp_perspective follows OpenCV's warpPerspective with WARP_INVERSE_MAP as DALI 2.4's CPU
// operator runs it (OpenCV 4.11's kernels): for output pixel (x, y) (pixel centres at integers) the
// source point is (M0 x + M1 y + M2, M3 x + M4 y + M5) / (M6 x + M7 y + M8), evaluated in float: the
// row's terms (M1 y + M2 ...) once per row, then a fused multiply-add of the column's, then the
// division. Nearest neighbour rounds the point half to even; linear and cubic (a = -0.75)
// interpolation weigh the taps in float, rounding the result once. Taps outside the image follow
// the border mode.
//
// remap samples at per-pixel source coordinates (mapx, mapy) in float, the constant border 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/convert.h"
#include "kernels/warp_perspective.h"
#include "kernels/image_types.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;
using F64Array = ArrayOf<double>;

enum Interp { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Border { kConstant = 0, kReplicate = 1, kReflect = 2, kReflect101 = 3, kWrap = 4 };

// Catmull-Rom-like cubic weights (a = -0.75) of the taps at -1, 0, 1, 2 for fraction x.
inline void cubic_weights(float x, float* w) {
  const float a = -0.75f;
  w[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  w[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  w[3] = 1.f - w[0] - w[1] - w[2];
}

// OpenCV's borderInterpolate; -1 for the constant border.
inline int64_t border_index(int64_t p, int64_t n, int border) {
  if (p >= 0 && p < n) return p;
  switch (border) {
    case kReplicate: return p < 0 ? 0 : n - 1;
    case kReflect:
    case kReflect101: {
      if (n == 1) return 0;
      int64_t delta = border == kReflect101;
      do {
        if (p < 0) p = -p - 1 + delta;
        else p = n - 1 - (p - n) - delta;
      } while (p < 0 || p >= n);
      return p;
    }
    case kWrap: {
      p %= n;
      return p < 0 ? p + n : p;
    }
    default: return -1;
  }
}

inline int saturate_int(float v) {  // half to even; NaN (a zero denominator) -> 0
  double d = v == v ? double(v) : 0.0;
  d = std::min(std::max(d, double(INT32_MIN)), double(INT32_MAX));
  return int(std::nearbyint(d));
}
inline int16_t saturate_short(int v) { return int16_t(std::min(std::max(v, -32768), 32767)); }

template <typename T> inline T from_float(float v) { return convert_sat<T>(std::nearbyint(v)); }
template <> inline float from_float<float>(float v) { return v; }

// One output pixel at source point (sx, sy) (centres at integers), linear or cubic.
template <typename T>
void sample(const T* in, int64_t h, int64_t w, int64_t c, bool cubic, float sx, float sy, int border,
            const T* fill, T* out) {
  const float fx0 = std::floor(sx), fy0 = std::floor(sy);
  const float ax = sx - fx0, ay = sy - fy0;
  const int k = cubic ? 4 : 2, back = cubic ? 1 : 0;
  const int64_t x0 = int64_t(fx0) - back, y0 = int64_t(fy0) - back;
  int64_t xs[4], ys[4];
  for (int t = 0; t < k; ++t) {
    xs[t] = border_index(x0 + t, w, border);
    ys[t] = border_index(y0 + t, h, border);
  }
  float wx[4], wy[4];
  if (cubic) {
    cubic_weights(ax, wx);
    cubic_weights(ay, wy);
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    auto tap = [&](int a, int b) {
      return float(ys[a] < 0 || xs[b] < 0 ? fill[ch] : in[(ys[a] * w + xs[b]) * c + ch]);
    };
    float v;
    if (!cubic) {
      v = (tap(0, 0) * (1 - ax) + tap(0, 1) * ax) * (1 - ay) + (tap(1, 0) * (1 - ax) + tap(1, 1) * ax) * ay;
    } else {
      v = 0.f;
      for (int a = 0; a < 4; ++a) {
        float row = 0.f;
        for (int b = 0; b < 4; ++b) row += tap(a, b) * wx[b];
        v += row * wy[a];
      }
    }
    out[ch] = from_float<T>(v);
  }
}

// m: output -> input, 9 doubles (float values), pixel centres at integers.
template <typename T>
void perspective_frame(const T* in, int64_t h, int64_t w, int64_t c, T* out, int64_t oh, int64_t ow, const double* m,
                       int interp, int border, const T* fill) {
  float mf[9];
  for (int k = 0; k < 9; ++k) mf[k] = float(m[k]);
  for (int64_t y = 0; y < oh; ++y) {
    const float fy = float(y);
    const float row_x = mf[1] * fy + mf[2], row_y = mf[4] * fy + mf[5], row_w = mf[7] * fy + mf[8];
    for (int64_t x = 0; x < ow; ++x) {
      T* px = out + (y * ow + x) * c;
      const float fx = float(x);
      const float den = std::fma(mf[6], fx, row_w);
      const float sx = std::fma(mf[0], fx, row_x) / den, sy = std::fma(mf[3], fx, row_y) / den;
      if (interp == kNearest) {
        int64_t bx = border_index(saturate_short(saturate_int(sx)), w, border);
        int64_t by = border_index(saturate_short(saturate_int(sy)), h, border);
        for (int64_t ch = 0; ch < c; ++ch) px[ch] = bx < 0 || by < 0 ? fill[ch] : in[(by * w + bx) * c + ch];
        continue;
      }
      sample(in, h, w, c, interp == kCubic, sx, sy, border, fill, px);
    }
  }
}

}  // namespace

// shapes [N, 4] (frames, H, W, C) in and out; matrices [N, 3, 3] (output -> input, centres at
// integers); fill [N, C] (the constant border, already in the element type's range).
void warp_perspective(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                      I64Array dst_shapes, I64Array dst_offsets, int dtype, F64Array matrices, int interp,
                      int border, F64Array fill) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  const int64_t n = in.num_samples;
  if (in.ndim != 4 || out.ndim != 4 || out.num_samples != n)
    throw std::invalid_argument("warp_perspective: samples must be (frames, H, W, C) in and out");
  if (matrices.size() != n * 9) throw std::invalid_argument("warp_perspective: matrices must be [N, 3, 3]");
  if (interp < kNearest || interp > kCubic || border < kConstant || border > kWrap)
    throw std::invalid_argument("warp_perspective: unknown interpolation or border mode");
  int64_t max_c = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (in.shape(i)[0] != out.shape(i)[0] || in.shape(i)[3] != out.shape(i)[3])
      throw SampleError(i, "warp_perspective: output frames/channels differ from the input's");
    max_c = std::max(max_c, in.shape(i)[3]);
  }
  if (fill.ndim() != 2 || fill.shape(0) != n || fill.shape(1) < max_c)
    throw std::invalid_argument("warp_perspective: fill must be [N, channels]");
  const double* mats = matrices.data();
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t *si = in.shape(i), *so = out.shape(i);
      std::vector<T> cval(si[3]);
      for (int64_t ch = 0; ch < si[3]; ++ch) cval[ch] = convert_sat<T>(fill.at(i, ch));
      for (int64_t f = 0; f < si[0]; ++f)
        perspective_frame(in.sample<T>(i) + f * si[1] * si[2] * si[3], si[1], si[2], si[3],
                          out.sample<T>(i) + f * so[1] * so[2] * so[3], so[1], so[2], mats + i * 9, interp, border,
                          cval.data());
    });
  };
  switch (static_cast<DType>(dtype)) {
    case DType::UINT8: run(static_cast<uint8_t*>(nullptr)); break;
    case DType::UINT16: run(static_cast<uint16_t*>(nullptr)); break;
    case DType::INT16: run(static_cast<int16_t*>(nullptr)); break;
    case DType::FLOAT: run(static_cast<float*>(nullptr)); break;
    default: throw std::invalid_argument("warp_perspective: supported types are UINT8, UINT16, INT16 and FLOAT");
  }
}

namespace {

// remap: output (x, y) samples the input at (mapx, mapy) (+0.5 shift removed for corner origin),
// float weights, constant border 0. maps: one float plane (H_out x W_out) per sample.
template <typename T>
void remap_frame(const T* in, int64_t h, int64_t w, int64_t c, T* out, int64_t oh, int64_t ow, const float* mx,
                 const float* my, int interp, float shift) {
  auto at = [&](int64_t yy, int64_t xx, int64_t ch) {
    return yy >= 0 && yy < h && xx >= 0 && xx < w ? float(in[(yy * w + xx) * c + ch]) : 0.f;
  };
  for (int64_t p = 0; p < oh * ow; ++p) {
    const float sx = mx[p] - shift, sy = my[p] - shift;  // centres at integers
    T* o = out + p * c;
    if (interp == kNearest) {
      const int64_t ix = int64_t(std::floor(sx + 0.5f)), iy = int64_t(std::floor(sy + 0.5f));
      for (int64_t ch = 0; ch < c; ++ch) o[ch] = from_float<T>(at(iy, ix, ch));
      continue;
    }
    const float fx0 = std::floor(sx), fy0 = std::floor(sy), fx = sx - fx0, fy = sy - fy0;
    const int64_t x0 = int64_t(fx0), y0 = int64_t(fy0);
    for (int64_t ch = 0; ch < c; ++ch) {
      float top = at(y0, x0, ch) * (1.f - fx) + at(y0, x0 + 1, ch) * fx;
      float bottom = at(y0 + 1, x0, ch) * (1.f - fx) + at(y0 + 1, x0 + 1, ch) * fx;
      o[ch] = from_float<T>(top * (1.f - fy) + bottom * fy);
    }
  }
}

}  // namespace

// shapes [N, 4] (frames, H, W, C); maps float, [frames, H, W] per sample (map_offsets), the output
// (frames, H_map, W_map, C); centre: map coordinates count from pixel centres (else corners).
void remap(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_shapes,
           I64Array dst_offsets, int dtype, F32Array mapx, F32Array mapy, I64Array map_offsets, int interp,
           bool centre) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  const int64_t n = in.num_samples;
  if (in.ndim != 4 || out.ndim != 4) throw std::invalid_argument("remap: samples must be (frames, H, W, C)");
  if (interp != kNearest && interp != kLinear) throw std::invalid_argument("remap: interpolation must be NN or linear");
  if (map_offsets.size() != n || mapx.size() != mapy.size()) throw std::invalid_argument("remap: maps do not match");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* so = out.shape(i);
    if (map_offsets.at(i) < 0 || map_offsets.at(i) + so[0] * so[1] * so[2] > mapx.size())
      throw SampleError(i, "remap: the maps are smaller than the output");
  }
  const float* mx = mapx.data();
  const float* my = mapy.data();
  const float shift = centre ? 0.f : 0.5f;
  PENSTOCK_DISPATCH_IMAGE(dtype, T, {
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t *si = in.shape(i), *so = out.shape(i);
      for (int64_t f = 0; f < si[0]; ++f) {
        const int64_t plane = f * so[1] * so[2];
        remap_frame(in.sample<T>(i) + f * si[1] * si[2] * si[3], si[1], si[2], si[3],
                    out.sample<T>(i) + plane * so[3], so[1], so[2], mx + map_offsets.at(i) + plane,
                    my + map_offsets.at(i) + plane, interp, shift);
      }
    });
  });
}

}  // namespace penstock
