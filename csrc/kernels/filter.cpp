// Neighbourhood filters over the spatial axes of images, videos and volumes: correlation with a
// per-sample filter (`filter`), the Laplacian (a sum of separable passes, `laplacian`) and the rank
// filters (median, erosion = minimum, dilation = maximum, `rank_filter`).
//
// A sample is seen as (outer, D, H, W, C): leading frames or planar channels merged into `outer`,
// a trailing channel axis (or 1) last; 2-D samples have D = 1. Arithmetic is in float; the result
// is saturated and rounded once, at the end: half to even for `filter` (as DALI's), half away from
// zero for the Laplacian.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/convert.h"
#include "kernels/filter.h"
#include "kernels/fast_convert.h"
#include "kernels/image_types.h"
#include "kernels/separable.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;
using F64Array = ArrayOf<double>;

// Border modes, numbered as operators/filter.py's BORDERS.
enum Border { kReflect101 = 0, kReflect1001 = 1, kWrap = 2, kClamp = 3, kConstant = 4 };

// The source index of position i of an axis of extent n, or -1 for the constant border.
inline int64_t border_index(int64_t i, int64_t n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
    case kReflect101: return reflect101(i, n);
    case kReflect1001: {
      int64_t period = 2 * n;
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - 1 - i;
    }
    case kWrap: {
      i %= n;
      return i < 0 ? i + n : i;
    }
    case kClamp: return i < 0 ? 0 : n - 1;
    default: return -1;
  }
}

// For each output position o of an axis (source position o - anchor + t for tap t): the source
// index, or -1 (constant border); [out_extent + taps - 1] entries.
std::vector<int64_t> axis_map(int64_t out_extent, int64_t taps, int64_t anchor, int64_t extent, int border) {
  std::vector<int64_t> map(out_extent + taps - 1);
  for (int64_t p = 0; p < int64_t(map.size()); ++p) map[p] = border_index(p - anchor, extent, border);
  return map;
}

template <typename T> inline float load(const T* p, int64_t i) { return float(p[i]); }
template <> inline float load<float16>(const float16* p, int64_t i) { return half_to_float(p[i].bits); }

#define PENSTOCK_DISPATCH_FILTER(code, T, ...)                                    \
  switch (static_cast<::penstock::DType>(code)) {                                 \
    case ::penstock::DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::INT8: { using T = int8_t; __VA_ARGS__; break; }       \
    case ::penstock::DType::UINT16: { using T = uint16_t; __VA_ARGS__; break; }   \
    case ::penstock::DType::INT16: { using T = int16_t; __VA_ARGS__; break; }     \
    case ::penstock::DType::FLOAT16: { using T = float16; __VA_ARGS__; break; }   \
    case ::penstock::DType::FLOAT: { using T = float; __VA_ARGS__; break; }       \
    default:                                                                      \
      throw std::invalid_argument("filters do not support element type " +       \
                                  ::penstock::dtype_name(code) +                  \
                                  " (supported: UINT8, INT8, UINT16, INT16, FLOAT16, FLOAT)"); \
  }

// Reads the (outer, D, H, W, C) shapes of sample i; `k` spatial dims (2 or 3) in the view.
struct Geometry {
  int64_t outer, d, h, w, c;
};

inline Geometry geometry(const int64_t* s, int k) {
  return k == 2 ? Geometry{s[0], 1, s[1], s[2], s[3]} : Geometry{s[0], s[1], s[2], s[3], s[4]};
}

// ---- correlation with a per-sample filter ---------------------------------------------------

struct FilterTask {
  int64_t sample, outer, z;  // one output plane (all rows) of one sample
};

// out[z, y, x, c] = sum over taps (i, j, l) of f[i, j, l] * in[z - az + i, y - ay + j, x - ax + l, c],
// taps in row-major order, accumulated in float.
template <typename In, typename Out>
void filter_plane(const In* in, Out* out, const Geometry& g, const Geometry& og, const float* f,
                  const int64_t* fs, const std::vector<int64_t>& zmap, const std::vector<int64_t>& ymap,
                  const std::vector<int64_t>& xmap, float fill, int64_t z, std::vector<float>& acc) {
  const int64_t row = og.w * g.c;
  acc.resize(row);
  for (int64_t y = 0; y < og.h; ++y) {
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int64_t i = 0; i < fs[0]; ++i) {
      int64_t sz = zmap[z + i];
      for (int64_t j = 0; j < fs[1]; ++j) {
        int64_t sy = ymap[y + j];
        const In* line = sz < 0 || sy < 0 ? nullptr : in + (sz * g.h + sy) * g.w * g.c;
        for (int64_t l = 0; l < fs[2]; ++l) {
          float wt = f[(i * fs[1] + j) * fs[2] + l];
          for (int64_t x = 0; x < og.w; ++x) {
            int64_t sx = xmap[x + l];
            for (int64_t ch = 0; ch < g.c; ++ch) {
              float v = line && sx >= 0 ? load(line, sx * g.c + ch) : fill;
              acc[x * g.c + ch] += wt * v;
            }
          }
        }
      }
    }
    convert_row<Out, Rounding::HalfToEven>(acc.data(), row, out + y * row);
  }
}

}  // namespace

// shapes [N, k + 2] (outer, spatial..., channels); out_shapes alike (smaller in "valid" mode);
// filters float32, packed, filter_shapes [N, k]; anchors [N, k] (the tap over each output
// position); fill [N] (constant border).
void filter(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
            I64Array out_shapes, I64Array dst_offsets, int dst_type, F32Array filters, I64Array filter_shapes,
            I64Array filter_offsets, I64Array anchors, int border, F64Array fill) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, out_shapes, dst_offsets, true);
  const int k = int(in.ndim) - 2;
  const int64_t n = in.num_samples;
  if (k < 2 || k > 3) throw std::invalid_argument("filter: samples must be (outer, 2 or 3 spatial dims, channels)");
  if (filter_shapes.ndim() != 2 || filter_shapes.shape(0) != n || filter_shapes.shape(1) != k ||
      anchors.shape(0) != n || anchors.shape(1) != k || filter_offsets.shape(0) != n || fill.shape(0) != n)
    throw std::invalid_argument("filter: filter shapes, offsets, anchors and fill values must have one row per sample");
  std::vector<int64_t> fs(n * 3), an(n * 3);
  for (int64_t i = 0; i < n; ++i) {
    for (int a = 0; a < 3; ++a) {
      int src_axis = a - (3 - k);
      fs[i * 3 + a] = src_axis < 0 ? 1 : filter_shapes.at(i, src_axis);
      an[i * 3 + a] = src_axis < 0 ? 0 : anchors.at(i, src_axis);
      if (fs[i * 3 + a] < 1 || an[i * 3 + a] < 0 || an[i * 3 + a] >= fs[i * 3 + a])
        throw SampleError(i, "filter: the anchor must lie within the filter");
    }
    int64_t vol = fs[i * 3] * fs[i * 3 + 1] * fs[i * 3 + 2];
    if (filter_offsets.at(i) < 0 || filter_offsets.at(i) + vol > filters.size())
      throw std::invalid_argument("filter: filter offsets out of range");
  }
  std::vector<FilterTask> tasks;
  for (int64_t i = 0; i < n; ++i) {
    Geometry og = geometry(out.shape(i), k);
    for (int64_t o = 0; o < og.outer; ++o)
      for (int64_t z = 0; z < og.d; ++z) tasks.push_back({i, o, z});
  }
  const float* fdata = filters.data();
  const double* fv = fill.data();
  PENSTOCK_DISPATCH_FILTER(src_type, In, {
    auto run = [&](auto* out_type) {
      using Out = std::remove_pointer_t<decltype(out_type)>;
      pool.parallel_for(int64_t(tasks.size()), [&](int64_t t) {
        const FilterTask& task = tasks[t];
        int64_t i = task.sample;
        Geometry g = geometry(in.shape(i), k), og = geometry(out.shape(i), k);
        const int64_t* f = fs.data() + i * 3;
        const int64_t* a = an.data() + i * 3;
        auto zmap = axis_map(og.d, f[0], a[0], g.d, border);
        auto ymap = axis_map(og.h, f[1], a[1], g.h, border);
        auto xmap = axis_map(og.w, f[2], a[2], g.w, border);
        std::vector<float> acc;
        filter_plane<In, Out>(in.sample<In>(i) + task.outer * g.d * g.h * g.w * g.c,
                              out.sample<Out>(i) + (task.outer * og.d + task.z) * og.h * og.w * og.c, g, og,
                              fdata + filter_offsets.at(i), f, zmap, ymap, xmap, float(fv[i]), task.z, acc);
      });
    };
    if (dst_type == src_type) run(static_cast<In*>(nullptr));
    else if (dst_type == int(DType::FLOAT)) run(static_cast<float*>(nullptr));
    else throw std::invalid_argument("filter: the output type must be the input's or FLOAT");
  });
}

namespace {

// ---- Laplacian: a sum over axes of separable passes ------------------------------------------

}  // namespace

// windows: float32, packed; for sample i, derivative axis a and axis b, the window applied along b
// when differentiating along a starts at window_offsets[i, a, b] and has window_sizes[i, a, b]
// (odd; 1 = no pass). scales [N, k]: the factor of each partial derivative.
void laplacian(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int src_type, Array dst,
               I64Array dst_offsets, int dst_type, F32Array windows, I64Array window_sizes, I64Array window_offsets,
               F32Array scales) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  const int k = int(in.ndim) - 2;
  const int64_t n = in.num_samples;
  if (k < 1 || k > 3) throw std::invalid_argument("laplacian: samples must be (outer, 1-3 spatial dims, channels)");
  if (window_sizes.size() != n * k * k || window_offsets.size() != n * k * k || scales.size() != n * k)
    throw std::invalid_argument("laplacian: windows must be [N, axes, axes] and scales [N, axes]");
  for (int64_t j = 0; j < n * k * k; ++j) {
    int64_t size = window_sizes.data()[j], off = window_offsets.data()[j];
    if (size < 1 || size % 2 == 0 || off < 0 || off + size > windows.size())
      throw SampleError(j / (k * k), "laplacian: window sizes must be odd and positive");
  }
  const float* wdata = windows.data();
  const int64_t* wsize = window_sizes.data();
  const int64_t* woff = window_offsets.data();
  const float* sc = scales.data();
  PENSTOCK_DISPATCH_FILTER(src_type, In, {
    auto run = [&](auto* out_type) {
      using Out = std::remove_pointer_t<decltype(out_type)>;
      pool.parallel_for(n, [&](int64_t i) {
        const int64_t* s = in.shape(i);
        int64_t vol = in.volume(i);
        if (vol == 0) return;
        const In* x = in.sample<In>(i);
        std::vector<float> acc(vol, 0.f), a(vol), b(vol), line;
        for (int da = 0; da < k; ++da) {
          for (int64_t e = 0; e < vol; ++e) a[e] = load(x, e);
          for (int ax = 0; ax < k; ++ax) {
            int64_t j = (i * k + da) * k + ax;
            if (wsize[j] <= 1) continue;
            int64_t outer = s[0], inner = s[k + 1];
            for (int d = 0; d < ax; ++d) outer *= s[1 + d];
            for (int d = ax + 1; d < k; ++d) inner *= s[1 + d];
            std::vector<float> w(wdata + woff[j], wdata + woff[j] + wsize[j]);
            convolve_axis(a.data(), b.data(), outer, s[1 + ax], inner, w, line);
            a.swap(b);
          }
          float scale = sc[i * k + da];
          for (int64_t e = 0; e < vol; ++e) acc[e] += scale * a[e];
        }
        convert_row<Out>(acc.data(), vol, out.sample<Out>(i));
      });
    };
    if (dst_type == src_type) run(static_cast<In*>(nullptr));
    else if (dst_type == int(DType::FLOAT)) run(static_cast<float*>(nullptr));
    else throw std::invalid_argument("laplacian: the output type must be the input's or FLOAT");
  });
}

namespace {

// ---- rank filters: median, minimum (erosion), maximum (dilation) -----------------------------

enum Rank { kMedian = 0, kMinimum = 1, kMaximum = 2 };

// One pass over a 2-D window (wh x ww, anchor ay, ax) of every plane of a sample: (outer, H, W, C).
// Outside the image: `border` (kConstant: the value that never wins, as OpenCV's morphology).
template <typename T>
void rank_pass(const T* in, T* out, const Geometry& g, int64_t wh, int64_t ww, int64_t ay, int64_t ax, int border,
               int rank) {
  auto ymap = axis_map(g.h, wh, ay, g.h, border);
  auto xmap = axis_map(g.w, ww, ax, g.w, border);
  std::vector<T> window(wh * ww);
  for (int64_t o = 0; o < g.outer; ++o) {
    const T* plane = in + o * g.h * g.w * g.c;
    T* dst = out + o * g.h * g.w * g.c;
    for (int64_t y = 0; y < g.h; ++y)
      for (int64_t x = 0; x < g.w; ++x)
        for (int64_t ch = 0; ch < g.c; ++ch) {
          int64_t count = 0;
          for (int64_t j = 0; j < wh; ++j) {
            int64_t sy = ymap[y + j];
            for (int64_t l = 0; l < ww; ++l) {
              int64_t sx = xmap[x + l];
              if (sy >= 0 && sx >= 0) window[count++] = plane[(sy * g.w + sx) * g.c + ch];
            }
          }
          auto less = [](const T& a, const T& b) { return load(&a, 0) < load(&b, 0); };
          T v;
          if (rank == kMinimum) v = *std::min_element(window.begin(), window.begin() + count, less);
          else if (rank == kMaximum) v = *std::max_element(window.begin(), window.begin() + count, less);
          else {
            std::nth_element(window.begin(), window.begin() + count / 2, window.begin() + count, less);
            v = window[count / 2];
          }
          dst[(y * g.w + x) * g.c + ch] = v;
        }
  }
}

}  // namespace

// shapes [N, 4] (outer, H, W, C); windows and anchors [N, 2] (H, W); the pass is repeated
// `iterations` times.
void rank_filter(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_offsets,
                 int type, int rank, I64Array windows, I64Array anchors, int border, int iterations) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  const int64_t n = in.num_samples;
  if (in.ndim != 4) throw std::invalid_argument("rank_filter: samples must be (outer, H, W, channels)");
  if (windows.size() != n * 2 || anchors.size() != n * 2)
    throw std::invalid_argument("rank_filter: windows and anchors must be [N, 2]");
  if (iterations < 1) throw std::invalid_argument("rank_filter: iterations must be positive");
  for (int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 2; ++a)
      if (windows.at(i, a) < 1 || anchors.at(i, a) < 0 || anchors.at(i, a) >= windows.at(i, a))
        throw SampleError(i, "rank_filter: window sizes must be positive and anchors inside the window");
  PENSTOCK_DISPATCH_FILTER(type, T, {
    pool.parallel_for(n, [&](int64_t i) {
      Geometry g{in.shape(i)[0], 1, in.shape(i)[1], in.shape(i)[2], in.shape(i)[3]};
      int64_t vol = in.volume(i);
      if (vol == 0) return;
      std::vector<T> tmp(iterations > 1 ? vol : 0);
      const T* a = in.sample<T>(i);
      for (int it = 0; it < iterations; ++it) {
        // the last pass writes the output; earlier ones alternate between the output and tmp
        T* b = (iterations - 1 - it) % 2 == 0 ? out.sample<T>(i) : tmp.data();
        rank_pass(a, b, g, windows.at(i, 0), windows.at(i, 1), anchors.at(i, 0), anchors.at(i, 1), border, rank);
        a = b;
      }
    });
  });
}

}  // namespace penstock
