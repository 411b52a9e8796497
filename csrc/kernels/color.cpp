// Per-pixel affine colour transform: out[o] = sum_c M[o][c] * in[c] + M[o][Cin], one matrix per
// sample. Brightness/contrast, hsv, hue, saturation, color_twist and colour-space conversion
// all reduce to this; Python builds the matrices. Math in float; outputs rounded half away
// from zero and saturated.
#include <algorithm>
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

}  // namespace penstock
