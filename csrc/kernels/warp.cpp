// 2-D affine warp. For output pixel (x, y) the source point is M * [x + 0.5, y + 0.5, 1] in
// continuous coordinates (pixel i covers [i, i + 1)); M maps output to input. NN takes the
// pixel containing that point; LINEAR blends the 4 pixels around it (centres at i + 0.5).
// Taps outside the image take `fill` when given, else the nearest edge pixel (clamp).
#include <cmath>
#include <stdexcept>
#include <string>
#include <optional>
#include <vector>

#include "engine/convert.h"
#include "kernels/warp.h"
#include "kernels/fast_convert.h"
#include "kernels/image_types.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;

enum Interp { kNearest = 0, kLinear = 1 };

// Keeps a coordinate in [lo, hi] (NaN -> lo) so the float -> int conversion is defined; every
// point beyond the image edge by more than one pixel samples like the edge +-1.
inline float bound(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

template <typename T, int INTERP, int CC>
PENSTOCK_HOT_LOOP void warp_frame(const T* in, int64_t H, int64_t W, T* out, int64_t Ho,
                                  int64_t Wo, int64_t c_rt, const float* m,
                                  const std::optional<float>& fill) {
  const int64_t C = CC ? CC : c_rt;
  const std::vector<T> fill_pixel(C, convert_sat<T>(fill.value_or(0.f)));
  const bool clamp = !fill.has_value() && H > 0 && W > 0;
  auto tap = [&](int64_t yy, int64_t xx) -> const T* {
    if (yy >= 0 && yy < H && xx >= 0 && xx < W) return in + (yy * W + xx) * C;
    if (!clamp) return fill_pixel.data();
    yy = yy < 0 ? 0 : (yy >= H ? H - 1 : yy);
    xx = xx < 0 ? 0 : (xx >= W ? W - 1 : xx);
    return in + (yy * W + xx) * C;
  };
  const float fw = float(W), fh = float(H);
  std::vector<float> row(INTERP == kLinear ? Wo * C : 0);  // linear: float row, rounded at once
  for (int64_t y = 0; y < Ho; ++y) {
    const float cy = float(y) + 0.5f;
    const float bx = m[1] * cy + m[2], by = m[4] * cy + m[5];
    T* o = out + y * Wo * C;
    float* r = row.data();
    for (int64_t x = 0; x < Wo; ++x, o += C, r += C) {
      const float cx = float(x) + 0.5f;
      const float sx = m[0] * cx + bx, sy = m[3] * cx + by;
      if constexpr (INTERP == kNearest) {
        const T* p = tap(floor_int(bound(sy, -1.f, fh)), floor_int(bound(sx, -1.f, fw)));
        for (int64_t c = 0; c < C; ++c) o[c] = p[c];
      } else {
        const float ux = bound(sx - 0.5f, -2.f, fw + 1.f), uy = bound(sy - 0.5f, -2.f, fh + 1.f);
        const int64_t x0 = floor_int(ux), y0 = floor_int(uy);
        const float fx = ux - float(x0), fy = uy - float(y0);
        const T *p00, *p01, *p10, *p11;
        if (x0 >= 0 && y0 >= 0 && x0 + 1 < W && y0 + 1 < H) {  // common case: all 4 inside
          p00 = in + (y0 * W + x0) * C;
          p01 = p00 + C;
          p10 = p00 + W * C;
          p11 = p10 + C;
        } else {
          p00 = tap(y0, x0), p01 = tap(y0, x0 + 1), p10 = tap(y0 + 1, x0), p11 = tap(y0 + 1, x0 + 1);
        }
        const float w00 = (1 - fx) * (1 - fy), w01 = fx * (1 - fy), w10 = (1 - fx) * fy, w11 = fx * fy;
        for (int64_t c = 0; c < C; ++c)
          r[c] = w00 * float(p00[c]) + w01 * float(p01[c]) + w10 * float(p10[c]) + w11 * float(p11[c]);
      }
    }
    if constexpr (INTERP == kLinear) convert_row<T>(row.data(), Wo * C, out + y * Wo * C);
  }
}

template <typename T, int INTERP>
void warp_frame_channels(const T* in, int64_t H, int64_t W, T* out, int64_t Ho, int64_t Wo,
                         int64_t C, const float* m, const std::optional<float>& fill) {
  if (C == 3) warp_frame<T, INTERP, 3>(in, H, W, out, Ho, Wo, C, m, fill);
  else if (C == 1) warp_frame<T, INTERP, 1>(in, H, W, out, Ho, Wo, C, m, fill);
  else warp_frame<T, INTERP, 0>(in, H, W, out, Ho, Wo, C, m, fill);
}

}  // namespace

// Samples are (frames, H, W, C); every frame of a sample uses that sample's 2x3 matrix.
void warp_affine(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                 I64Array dst_shapes, I64Array dst_offsets, int dtype, F32Array matrices, int interp,
                 std::optional<float> fill) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  if (in.ndim != 4 || out.ndim != 4 || out.num_samples != n)
    throw std::invalid_argument("warp_affine: samples must be (frames, H, W, C) in and out");
  if (matrices.ndim() != 3 || matrices.shape(0) != n || matrices.shape(1) != 2 || matrices.shape(2) != 3)
    throw std::invalid_argument("warp_affine: matrices must be [N, 2, 3]");
  if (interp != kNearest && interp != kLinear)
    throw std::invalid_argument("warp_affine: only nearest-neighbour and linear interpolation are supported");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t *si = in.shape(i), *so = out.shape(i);
    if (si[0] != so[0] || si[3] != so[3])
      throw SampleError(i, "warp_affine: output frames/channels differ from the input's");
  }
  const float* mats = matrices.data();
  PENSTOCK_DISPATCH_IMAGE(dtype, T, {
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t *si = in.shape(i), *so = out.shape(i);
      const int64_t F = si[0], H = si[1], W = si[2], C = si[3], Ho = so[1], Wo = so[2];
      for (int64_t f = 0; f < F; ++f) {
        const T* s = in.sample<T>(i) + f * H * W * C;
        T* d = out.sample<T>(i) + f * Ho * Wo * C;
        if (interp == kNearest)
          warp_frame_channels<T, kNearest>(s, H, W, d, Ho, Wo, C, mats + i * 6, fill);
        else
          warp_frame_channels<T, kLinear>(s, H, W, d, Ho, Wo, C, mats + i * 6, fill);
      }
    });
  });
}

namespace {

constexpr double kRadiansPerDegree = 3.14159265358979323846 / 180.0;

void check_rotation(const ArrayOf<double>& angles, const I64Array& shapes, const char* what) {
  if (angles.ndim() != 1 || shapes.ndim() != 2 || shapes.shape(1) != 4 || shapes.shape(0) != angles.size())
    throw std::invalid_argument(std::string(what) + ": angles [N] and shapes [N, 4] (frames, H, W, C)");
}

}  // namespace

I64Array rotated_sizes(ArrayOf<double> angles, I64Array shapes, bool keep_size) {
  check_rotation(angles, shapes, "rotated_sizes");
  const int64_t n = angles.size();
  auto out = I64Array::empty({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t h = shapes.data()[4 * i + 1], w = shapes.data()[4 * i + 2];
    int64_t* hw = out.mutable_data() + 2 * i;
    if (keep_size) {
      hw[0] = h, hw[1] = w;
      continue;
    }
    const double a = angles.data()[i] * kRadiansPerDegree, c = std::abs(std::cos(a)), s = std::abs(std::sin(a));
    constexpr double kTolerance = 1e-2;
    const int64_t w_out = int64_t(std::ceil(c * double(w) + s * double(h) - kTolerance));
    const int64_t h_out = int64_t(std::ceil(c * double(h) + s * double(w) - kTolerance));
    const int64_t w_parity = s <= c ? w % 2 : h % 2, h_parity = s <= c ? h % 2 : w % 2;
    hw[0] = h_out + (h_out % 2 != h_parity), hw[1] = w_out + (w_out % 2 != w_parity);
  }
  return out;
}

ArrayOf<float> rotation_matrices(ArrayOf<double> angles, I64Array shapes, I64Array out_hw) {
  check_rotation(angles, shapes, "rotation_matrices");
  const int64_t n = angles.size();
  if (out_hw.ndim() != 2 || out_hw.shape(0) != n || out_hw.shape(1) != 2)
    throw std::invalid_argument("rotation_matrices: out_hw must be [N, 2]");
  auto out = ArrayOf<float>::empty({n, 2, 3});
  for (int64_t i = 0; i < n; ++i) {
    const double a = angles.data()[i] * kRadiansPerDegree, c = std::cos(a), s = std::sin(a);
    // (x, y) centres of the input and the output
    const double in_x = double(shapes.data()[4 * i + 2]) * 0.5, in_y = double(shapes.data()[4 * i + 1]) * 0.5;
    const double out_x = double(out_hw.data()[2 * i + 1]) * 0.5, out_y = double(out_hw.data()[2 * i]) * 0.5;
    float* m = out.mutable_data() + 6 * i;
    m[0] = float(c), m[1] = float(-s), m[2] = float(in_x - (c * out_x + -s * out_y));
    m[3] = float(s), m[4] = float(c), m[5] = float(in_y - (s * out_x + c * out_y));
  }
  return out;
}

}  // namespace penstock
