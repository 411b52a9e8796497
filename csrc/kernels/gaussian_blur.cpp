// Separable Gaussian blur with "reflect 101" borders (... 2 1 | 0 1 2 ... n-1 | n-2 ...).
// A sample is (F, S_1 .. S_k, C): F leading frames and C channels are never blurred; each of
// the k spatial axes has its own sigma and (odd) window size. Passes run in float; the result
// is rounded/saturated once, at the end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/convert.h"
#include "kernels/gaussian_blur.h"
#include "kernels/fast_convert.h"
#include "kernels/image_types.h"
#include "kernels/separable.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;

constexpr int kMaxSpatial = 3;

// Normalized exp(-x^2 / (2 sigma^2)) over [-r, r].
std::vector<float> gaussian_window(int64_t size, float sigma) {
  int64_t r = (size - 1) / 2;
  std::vector<float> w(size);
  float scale = 0.5f / (sigma * sigma), sum = 0.f;
  for (int64_t x = -r; x <= r; ++x) sum += w[x + r] = std::exp(-float(x * x) * scale);
  for (auto& v : w) v /= sum;
  return w;
}

template <typename In, typename Out>
void blur_sample(const In* in, Out* out, const int64_t* shape, int k, const float* sigmas,
                 const int64_t* windows) {
  int64_t vol = 1;
  for (int d = 0; d < k + 2; ++d) vol *= shape[d];
  if (vol == 0) return;  // an empty axis: nothing to blur (reflect101 needs an extent >= 1)
  std::vector<float> a(in, in + vol), b(vol), line;
  for (int ax = 0; ax < k; ++ax) {
    if (windows[ax] <= 1) continue;
    int64_t outer = shape[0], inner = shape[k + 1];
    for (int d = 0; d < ax; ++d) outer *= shape[1 + d];
    for (int d = ax + 1; d < k; ++d) inner *= shape[1 + d];
    convolve_axis(a.data(), b.data(), outer, shape[1 + ax], inner,
                  gaussian_window(windows[ax], sigmas[ax]), line);
    a.swap(b);
  }
  convert_row<Out>(a.data(), vol, out);
}

}  // namespace

// shapes: [N, k + 2] = (frames, spatial..., channels); sigmas float [N, k]; windows int [N, k]
// (odd; 1 = that axis is not blurred).
void gaussian_blur(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
                   I64Array dst_offsets, int dst_type, F32Array sigmas, I64Array windows) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  int k = int(in.ndim) - 2;
  if (k < 1 || k > kMaxSpatial)
    throw std::invalid_argument("gaussian_blur: samples must be (frames, 1-3 spatial dims, channels)");
  if (sigmas.ndim() != 2 || windows.ndim() != 2 || sigmas.shape(0) != n || windows.shape(0) != n ||
      sigmas.shape(1) != k || windows.shape(1) != k)
    throw std::invalid_argument("gaussian_blur: sigmas and windows must be [N, spatial dims]");
  const float* sg = sigmas.data();
  const int64_t* win = windows.data();
  for (int64_t i = 0; i < n; ++i)
    for (int ax = 0; ax < k; ++ax) {
      int64_t ws = win[i * k + ax];
      if (ws < 1 || ws % 2 == 0)
        throw SampleError(i, "gaussian_blur: window size must be odd and positive, got " + std::to_string(ws));
      if (ws > 1 && !(sg[i * k + ax] > 0.f))
        throw SampleError(i, "gaussian_blur: sigma must be positive");
    }
  PENSTOCK_DISPATCH_IMAGE(src_type, In, {
    PENSTOCK_DISPATCH_IMAGE(dst_type, Out, {
      pool.parallel_for(n, [&](int64_t i) {
        blur_sample(in.sample<In>(i), out.sample<Out>(i), in.shape(i), k, sg + i * k, win + i * k);
      });
    });
  });
}

ArrayTuple blur_windows(int64_t n, ArrayOf<double> sigma, I64Array window) {
  const int64_t k = sigma.ndim() == 2 ? sigma.shape(1) : -1;
  auto rows = [n, k](const Array& a) {
    return a.ndim() == 2 && a.shape(1) == k && (a.shape(0) == n || a.shape(0) == 1);
  };
  if (n < 0 || k < 1 || !rows(sigma) || !rows(window))
    throw std::invalid_argument("blur_windows: sigma and window [N, k] or [1, k]");
  auto at = [k](const auto& a, int64_t i, int64_t axis) { return a.data()[(a.shape(0) == 1 ? 0 : i) * k + axis]; };
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < k; ++a)
      if (!std::isfinite(at(sigma, i, a))) throw std::invalid_argument("sigma and window_size must be finite");
  char text[256];
  for (int64_t i = 0; i < n; ++i)  // the first (sample, axis) at fault, in DALI's order and words
    for (int64_t a = 0; a < k; ++a) {
      const double s = at(sigma, i, a);
      const int64_t w = at(window, i, a);
      if (s < 0)
        std::snprintf(text, sizeof(text), "`sigma` must have non-negative values, got %g for sample: %lld, axis: %lld.",
                      s, (long long)i, (long long)a);
      else if (w < 0)
        std::snprintf(text, sizeof(text), "`window_size` must have non-negative values, got %lld for sample: %lld, "
                      "axis : %lld.", (long long)w, (long long)i, (long long)a);
      else if (s == 0 && w == 0)
        std::snprintf(text, sizeof(text), "`sigma` and `window_size` shouldn't be 0 at the same time for sample: "
                      "%lld, axis: %lld.", (long long)i, (long long)a);
      else
        continue;
      throw std::invalid_argument(text);
    }
  auto sigmas = ArrayOf<float>::empty({n, k});
  auto windows = I64Array::empty({n, k});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < k; ++a) {
      const double s = at(sigma, i, a);
      const int64_t given = at(window, i, a);
      const int64_t w = given > 0 ? given : int64_t(2 * std::ceil(s * 3) + 1);
      if (w % 2 == 0)
        throw std::invalid_argument("Kernel window should have odd length, got: " + std::to_string(w) + ".");
      const int64_t radius = (w - 1) / 2;
      windows.mutable_data()[i * k + a] = w;
      sigmas.mutable_data()[i * k + a] = float(s > 0 ? s : double(radius - 1) * 0.3 + 0.8);  // OpenCV's rule
    }
  return {sigmas, windows};
}

ArrayTuple gaussian_windows(ArrayOf<float> sigmas, I64Array windows) {
  if (sigmas.ndim() != 2 || windows.ndim() != 2 || sigmas.shape(0) != windows.shape(0) ||
      sigmas.shape(1) != windows.shape(1))
    throw std::invalid_argument("gaussian_windows: sigmas and windows must be [N, k] alike");
  const int64_t count = windows.size();
  auto starts = I64Array::empty(windows.shape());
  int64_t total = 0;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t w = windows.data()[j];
    if (w < 1 || w % 2 == 0) throw std::invalid_argument("gaussian_blur: window size must be odd and positive");
    if (w > 1 && !(sigmas.data()[j] > 0)) throw std::invalid_argument("gaussian_blur: sigma must be positive");
    starts.mutable_data()[j] = total;
    total += w;
  }
  auto weights = ArrayOf<float>::empty({std::max<int64_t>(total, 1)});
  weights.mutable_data()[0] = 0.f;
  for (int64_t j = 0; j < count; ++j) {
    const std::vector<float> w = gaussian_window(windows.data()[j], sigmas.data()[j]);
    std::copy(w.begin(), w.end(), weights.mutable_data() + starts.data()[j]);
  }
  return {weights, starts};
}

}  // namespace penstock
