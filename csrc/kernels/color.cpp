// Per-pixel affine colour transform: out[o] = sum_c M[o][c] * in[c] + M[o][Cin], one matrix per
// sample. Brightness/contrast, hsv, hue, saturation, color_twist and colour-space conversion
// all reduce to this; Python builds the matrices. Math in float; outputs rounded half away
// from zero and saturated.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/convert.h"
#include "kernels/color.h"
#include "kernels/fast_convert.h"
#include "kernels/image_types.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;

// CI/CO > 0 fix the channel counts at compile time (the common 3 -> 3 case); 0 = runtime.
// Pixels go in blocks: float results first, then one vectorized rounding pass per block.
template <int CI, int CO, typename In, typename Out>
PENSTOCK_HOT_LOOP void transform_pixels(const In* in, Out* out, int64_t pixels, const float* m, int ci_rt, int co_rt) {
  const int ci = CI ? CI : ci_rt, co = CO ? CO : co_rt;
  constexpr int64_t kBlock = 256;
  std::vector<float> acc(kBlock * co);
  for (int64_t p0 = 0; p0 < pixels; p0 += kBlock) {
    const int64_t np = std::min(kBlock, pixels - p0);
    const In* s = in + p0 * ci;
    for (int64_t p = 0; p < np; ++p, s += ci) {
      for (int o = 0; o < co; ++o) {
        const float* row = m + o * (ci + 1);
        float a = row[ci];
        for (int c = 0; c < ci; ++c) a += row[c] * static_cast<float>(s[c]);
        acc[p * co + o] = a;
      }
    }
    convert_row<Out>(acc.data(), np * co, out + p0 * co);
  }
}

}  // namespace

void color_matrix(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets,
                  int src_type, Array dst, I64Array dst_shapes, I64Array dst_offsets,
                  int dst_type, F32Array matrices) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  if (out.num_samples != n || in.ndim < 1 || out.ndim != in.ndim)
    throw std::invalid_argument("color_matrix: input and output batches do not match");
  if (matrices.ndim() != 3 || matrices.shape(0) != n)
    throw std::invalid_argument("color_matrix: matrices must be [N, Cout, Cin + 1]");
  const int co = int(matrices.shape(1)), ci = int(matrices.shape(2)) - 1;
  if (co < 1 || ci < 1) throw std::invalid_argument("color_matrix: empty colour matrix");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* si = in.shape(i);
    const int64_t* so = out.shape(i);
    if (si[in.ndim - 1] != ci || so[in.ndim - 1] != co)
      throw SampleError(i, "color_matrix: sample has " + std::to_string(si[in.ndim - 1]) +
                               " channels, the transform expects " + std::to_string(ci));
    for (int64_t d = 0; d + 1 < in.ndim; ++d)
      if (si[d] != so[d]) throw SampleError(i, "color_matrix: output shape does not match input");
  }
  const float* m = matrices.data();
  const int64_t msize = int64_t(co) * (ci + 1);
  PENSTOCK_DISPATCH_IMAGE(src_type, In, {
    PENSTOCK_DISPATCH_IMAGE(dst_type, Out, {
      pool.parallel_for(n, [&](int64_t i) {
        int64_t pixels = in.volume(i) / ci;
        const In* s = in.sample<In>(i);
        Out* d = out.sample<Out>(i);
        if (ci == 3 && co == 3)
          transform_pixels<3, 3>(s, d, pixels, m + i * msize, ci, co);
        else
          transform_pixels<0, 0>(s, d, pixels, m + i * msize, ci, co);
      });
    });
  });
}

namespace {

// Checks that each column holds [n] values or [1] for every sample.
void check_columns(int64_t n, std::initializer_list<const ArrayOf<double>*> columns, const char* what) {
  if (n < 0) throw std::invalid_argument(std::string(what) + ": the batch size must not be negative");
  for (const auto* column : columns)
    if (column->ndim() != 1 || (column->size() != 1 && column->size() != n))
      throw std::invalid_argument(std::string(what) + ": each column must be [N] (" + std::to_string(n) + ") or [1]");
}

double at(const ArrayOf<double>& column, int64_t i) { return column.data()[column.size() == 1 ? 0 : i]; }

}  // namespace

ArrayOf<float> scaled_identity_matrices(int64_t n, ArrayOf<double> gain, ArrayOf<double> offset, int64_t channels) {
  check_columns(n, {&gain, &offset}, "scaled_identity_matrices");
  const int64_t width = channels + 1;
  if (channels < 1) throw std::invalid_argument("scaled_identity_matrices: channels must be positive");
  auto out = ArrayOf<float>::empty({n, channels, width});
  float* m = out.mutable_data();
  std::fill(m, m + n * channels * width, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < channels; ++c) {
      m[(i * channels + c) * width + c] = float(at(gain, i));
      m[(i * channels + c) * width + channels] = float(at(offset, i));
    }
  return out;
}

ArrayOf<float> hsv_matrices(int64_t n, ArrayOf<double> hue, ArrayOf<double> saturation, ArrayOf<double> value,
                            ArrayOf<double> gain, ArrayOf<double> offset, ArrayOf<double> yiq_to_rgb,
                            ArrayOf<double> rgb_to_yiq) {
  check_columns(n, {&hue, &saturation, &value, &gain, &offset}, "hsv_matrices");
  if (yiq_to_rgb.size() != 9 || rgb_to_yiq.size() != 9)
    throw std::invalid_argument("hsv_matrices: the YIQ matrices are [3, 3]");
  const double *to_rgb = yiq_to_rgb.data(), *to_yiq = rgb_to_yiq.data();
  constexpr double kRadiansPerDegree = 3.14159265358979323846 / 180.0;
  auto out = ArrayOf<float>::empty({n, 3, 4});
  for (int64_t i = 0; i < n; ++i) {
    const double h = at(hue, i) * kRadiansPerDegree, s = at(saturation, i), v = at(value, i);
    const double inner[9] = {v, 0, 0, 0, std::cos(h) * s * v, std::sin(h) * s * v, 0, -std::sin(h) * s * v,
                             std::cos(h) * s * v};
    double left[9];  // yiq_to_rgb @ inner, then @ rgb_to_yiq (numpy's order of the products and sums)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) sum += to_rgb[3 * r + k] * inner[3 * k + c];
        left[3 * r + c] = sum;
      }
    float* m = out.mutable_data() + 12 * i;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) sum += left[3 * r + k] * to_yiq[3 * k + c];
        m[4 * r + c] = float(sum * at(gain, i));
      }
      m[4 * r + 3] = float(at(offset, i));
    }
  }
  return out;
}

}  // namespace penstock
