// Separable resize of channel-last images (HWC) and volumes (DHWC), with any number of outer
// (frame) dimensions: [F..., (D,) H, W, C]. Per sample: output size, float source ROI (reversed =
// flip) and min/mag filters per axis; see resize_filters.h for the sampling convention.
//
// A 2-D frame is produced row by row: vertical pass (weighted sum of whole source rows, which
// vectorizes over W*C) into a float row, horizontal pass over that row taking one pixel as a
// 4-float vector (so any channel count runs as SIMD), then rounding/saturating into the output.
// Volumes first resample depth into a float buffer, then run the 2-D path per slice.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/resize.h"
#include "kernels/fast_convert.h"
#include "kernels/resize_filters.h"

namespace penstock {
namespace {

using F64Array = ArrayOf<double>;
using I32Array = ArrayOf<int32_t>;

typedef float v4f __attribute__((vector_size(16)));
constexpr int64_t kPad = 4;  // floats after each row buffer: the last pixel's vector overreads

inline v4f load4(const float* p) {
  v4f v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store4(float* p, v4f v) { std::memcpy(p, &v, sizeof(v)); }

// acc[i] = sum_k w[k] * rows[k][i] for i < n (the rows may be any input type).
template <typename In>
__attribute__((target_clones("avx2", "default")))
void weighted_rows(const In* base, int64_t row_stride, int64_t first, int64_t taps, const float* w,
                   int64_t n, float* acc) {
  const In* r0 = base + first * row_stride;
  float w0 = w[0];
  for (int64_t i = 0; i < n; ++i) acc[i] = w0 * float(r0[i]);
  int64_t k = 1;
  for (; k + 1 < taps; k += 2) {  // two rows per sweep halves the traffic on acc
    const In* ra = base + (first + k) * row_stride;
    const In* rb = ra + row_stride;
    float wa = w[k], wb = w[k + 1];
    for (int64_t i = 0; i < n; ++i) acc[i] += wa * float(ra[i]) + wb * float(rb[i]);
  }
  if (k < taps) {
    const In* ra = base + (first + k) * row_stride;
    float wa = w[k];
    for (int64_t i = 0; i < n; ++i) acc[i] += wa * float(ra[i]);
  }
}

// Horizontal pass over one float row of pixels with `channels` values each: every pixel (or
// 4-channel group of it) is one vector. Stores run left to right, so the lanes a vector writes
// past its pixel are overwritten by the next pixel (the row has kPad floats of slack).
// `w4` holds the weights already broadcast to vectors (saves a shuffle per tap).
void horizontal_row(const float* in, int64_t channels, const AxisFilter& fx, const v4f* w4, int64_t col_offset,
                    float* out) {
  int64_t taps = fx.taps;
  for (int64_t x = 0; x < fx.out_size; ++x) {
    const v4f* w = w4 + x * taps;
    for (int64_t c0 = 0; c0 < channels; c0 += 4) {
      const float* p = in + (fx.start[x] - col_offset) * channels + c0;
      v4f acc = load4(p) * w[0];
      for (int64_t k = 1; k < taps; ++k) acc += load4(p + k * channels) * w[k];
      store4(out + x * channels + c0, acc);
    }
  }
}

// One 2-D frame [H, W, C] -> [H', W', C].
template <typename In, typename Out>
void resize_frame(const In* src, int64_t W, int64_t C, Out* dst, const AxisFilter& fy,
                  const AxisFilter& fx, std::vector<float>& row_v, std::vector<float>& row_h) {
  if (fy.out_size == 0 || fx.out_size == 0) return;
  // Only the columns the horizontal taps read need the vertical pass.
  int64_t col_lo = W, col_hi = 0;
  for (int64_t x = 0; x < fx.out_size; ++x) {
    col_lo = std::min<int64_t>(col_lo, fx.start[x]);
    col_hi = std::max<int64_t>(col_hi, fx.start[x] + fx.taps);
  }
  int64_t span = (col_hi - col_lo) * C, out_row = fx.out_size * C;
  row_v.resize(span + kPad);
  row_h.resize(out_row + kPad);
  std::fill(row_v.begin() + span, row_v.end(), 0.0f);
  std::vector<v4f> w4(fx.weights.size());
  for (size_t k = 0; k < w4.size(); ++k) w4[k] = v4f{} + fx.weights[k];
  for (int64_t y = 0; y < fy.out_size; ++y) {
    weighted_rows<In>(src + col_lo * C, W * C, fy.start[y], fy.taps, &fy.weights[y * fy.taps], span, row_v.data());
    horizontal_row(row_v.data(), C, fx, w4.data(), col_lo, row_h.data());
    convert_row<Out>(row_h.data(), out_row, dst + y * out_row);
  }
}

struct SampleGeometry {
  int64_t outer = 1, channels = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};  // depth, height, width (depth 1 for 2-D)
};

template <typename In, typename Out>
void resize_sample(const In* src, Out* dst, const SampleGeometry& g, int spatial, const AxisFilter* f) {
  // f[0..2] = depth, height, width filters (depth unused for 2-D)
  std::vector<float> row_v, row_h, volume;
  int64_t C = g.channels;
  int64_t in_frame = g.in[0] * g.in[1] * g.in[2] * C, out_frame = g.out[0] * g.out[1] * g.out[2] * C;
  int64_t in_slice = g.in[1] * g.in[2] * C, out_slice = g.out[1] * g.out[2] * C;
  for (int64_t o = 0; o < g.outer; ++o) {
    const In* s = src + o * in_frame;
    Out* d = dst + o * out_frame;
    if (spatial == 2) {
      resize_frame<In, Out>(s, g.in[2], C, d, f[1], f[2], row_v, row_h);
      continue;
    }
    volume.resize(g.out[0] * in_slice);
    for (int64_t z = 0; z < g.out[0]; ++z)
      weighted_rows<In>(s, in_slice, f[0].start[z], f[0].taps, &f[0].weights[z * f[0].taps], in_slice,
                        volume.data() + z * in_slice);
    for (int64_t z = 0; z < g.out[0]; ++z)
      resize_frame<float, Out>(volume.data() + z * in_slice, g.in[2], C, d + z * out_slice, f[1], f[2], row_v, row_h);
  }
}

#define PENSTOCK_DISPATCH_RESIZE_TYPE(code, T, ...)                                 \
  switch (static_cast<DType>(code)) {                                               \
    case DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }                   \
    case DType::UINT16: { using T = uint16_t; __VA_ARGS__; break; }                 \
    case DType::INT16: { using T = int16_t; __VA_ARGS__; break; }                   \
    case DType::FLOAT: { using T = float; __VA_ARGS__; break; }                     \
    default: throw std::invalid_argument("resize: unsupported type " + dtype_name(code)); \
  }

}  // namespace

// src/dst: batches of [outer..., spatial..., C]; roi [N, 2*spatial] = starts then ends (outer
// spatial axis first, in source pixels); min_filter/mag_filter [N, spatial] InterpType codes.
void resize(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, int src_type,
            Array dst, I64Array dst_shapes, I64Array dst_offsets, int dst_type, int spatial,
            F64Array roi, I32Array min_filter, I32Array mag_filter, bool antialias) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t N = in.num_samples, nd = in.ndim;
  if (spatial != 2 && spatial != 3) throw std::invalid_argument("resize: 2 or 3 spatial dimensions");
  if (nd < spatial + 1 || out.ndim != nd || out.num_samples != N)
    throw std::invalid_argument("resize: input and output batches must have matching rank and size");
  if (roi.ndim() != 2 || roi.shape(0) != N || roi.shape(1) != 2 * spatial ||
      min_filter.ndim() != 2 || min_filter.shape(0) != N || min_filter.shape(1) != spatial ||
      mag_filter.ndim() != 2 || mag_filter.shape(0) != N || mag_filter.shape(1) != spatial)
    throw std::invalid_argument("resize: roi must be [N, 2*spatial] and filters [N, spatial]");
  const double* roi_p = roi.data();
  const int32_t* minf = min_filter.data();
  const int32_t* magf = mag_filter.data();
  std::vector<SampleGeometry> geo(N);
  int64_t outer_dims = nd - spatial - 1;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t* is = in.shape(i);
    const int64_t* os = out.shape(i);
    SampleGeometry& g = geo[i];
    for (int64_t d = 0; d < outer_dims; ++d) {
      if (is[d] != os[d]) throw SampleError(i, "resize: outer (frame) dimensions of the output differ from the input");
      g.outer *= is[d];
    }
    g.channels = is[nd - 1];
    if (os[nd - 1] != g.channels) throw SampleError(i, "resize: output channel count differs from the input");
    for (int a = 0; a < spatial; ++a) {
      g.in[3 - spatial + a] = is[outer_dims + a];
      g.out[3 - spatial + a] = os[outer_dims + a];
      if (g.out[3 - spatial + a] > 0 && g.in[3 - spatial + a] == 0)
        throw SampleError(i, "resize: cannot resize an empty image to a non-empty one");
    }
    for (int k = 0; k < 2 * spatial; ++k)
      if (!std::isfinite(roi_p[i * 2 * spatial + k])) throw SampleError(i, "resize: ROI is not finite");
  }
  PENSTOCK_DISPATCH_RESIZE_TYPE(src_type, In, {
    PENSTOCK_DISPATCH_RESIZE_TYPE(dst_type, Out, {
      if (in.elem_size != int64_t(sizeof(In)) || out.elem_size != int64_t(sizeof(Out)))
        throw std::invalid_argument("resize: buffer element sizes do not match the given types");
      pool.parallel_for(N, [&](int64_t i) {
        const SampleGeometry& g = geo[i];
        AxisFilter f[3];
        for (int a = 0; a < spatial; ++a) {
          int axis = 3 - spatial + a;
          const double* r = roi_p + i * 2 * spatial;
          make_axis_filter(f[axis], g.in[axis], g.out[axis], r[a], r[spatial + a], minf[i * spatial + a],
                           magf[i * spatial + a], antialias);
        }
        resize_sample<In, Out>(in.sample<In>(i), out.sample<Out>(i), g, spatial, f);
      });
    });
  });
}

// The taps of many axes at once, for kernels that resample elsewhere (the GPU): axis k goes from
// in_sizes[k] to out_sizes[k] over the source range [roi_start[k], roi_end[k]). Returns per axis
// the tap count, where its starts and weights begin in the packed arrays, and the lowest first /
// highest last source index it reads; then the packed starts (int32) and weights (float).
ResizeTaps resize_taps(ThreadPool& pool, I64Array in_sizes, I64Array out_sizes, F64Array roi_start, F64Array roi_end,
                       I32Array min_filter, I32Array mag_filter, bool antialias) {
  int64_t M = in_sizes.size();
  if (out_sizes.size() != M || roi_start.size() != M || roi_end.size() != M || min_filter.size() != M ||
      mag_filter.size() != M)
    throw std::invalid_argument("resize_taps: all per-axis arrays need the same length");
  std::vector<AxisFilter> filters(M);
  const int64_t *in_p = in_sizes.data(), *out_p = out_sizes.data();
  const double *rs = roi_start.data(), *re = roi_end.data();
  const int32_t *minf = min_filter.data(), *magf = mag_filter.data();
  pool.parallel_for(M, [&](int64_t k) {
    make_axis_filter(filters[k], in_p[k], out_p[k], rs[k], re[k], minf[k], magf[k], antialias);
  });
  auto taps = I64Array::empty({M}), start_at = I64Array::empty({M}), weight_at = I64Array::empty({M});
  auto lo = I64Array::empty({M}), hi = I64Array::empty({M});
  int64_t n_start = 0, n_weight = 0;
  for (int64_t k = 0; k < M; ++k) {
    const AxisFilter& f = filters[k];
    taps.mutable_data()[k] = f.taps;
    start_at.mutable_data()[k] = n_start;
    weight_at.mutable_data()[k] = n_weight;
    int64_t first = f.in_size, last = 0;
    for (int64_t j = 0; j < f.out_size; ++j) {
      first = std::min<int64_t>(first, f.start[j]);
      last = std::max<int64_t>(last, f.start[j] + f.taps);
    }
    lo.mutable_data()[k] = f.out_size ? first : 0;
    hi.mutable_data()[k] = f.out_size ? last : 0;
    n_start += int64_t(f.start.size());
    n_weight += int64_t(f.weights.size());
  }
  auto starts = I32Array::empty({std::max<int64_t>(n_start, 1)});
  auto weights = ArrayOf<float>::empty({std::max<int64_t>(n_weight, 1)});
  for (int64_t k = 0; k < M; ++k) {
    const AxisFilter& f = filters[k];
    std::copy(f.start.begin(), f.start.end(), starts.mutable_data() + start_at.data()[k]);
    std::copy(f.weights.begin(), f.weights.end(), weights.mutable_data() + weight_at.data()[k]);
  }
  return {taps, start_at, weight_at, lo, hi, starts, weights};
}

ArrayTuple resize_axis_spans(I64Array src_shapes, I64Array dst_shapes, F64Array roi, I32Array min_filter,
                             I32Array mag_filter, bool antialias, int64_t per_block) {
  const int64_t n = src_shapes.ndim() == 2 ? src_shapes.shape(0) : -1, nd = n >= 0 ? src_shapes.shape(1) : 0;
  if (n < 0 || nd < 3 || dst_shapes.ndim() != 2 || dst_shapes.shape(0) != n || dst_shapes.shape(1) != nd)
    throw std::invalid_argument("resize_axis_spans: shapes must be [N, nd >= 3] alike");
  if (roi.size() != 4 * n || min_filter.size() != 2 * n || mag_filter.size() != 2 * n)
    throw std::invalid_argument("resize_axis_spans: roi must be [N, 4] and the filters [N, 2]");
  if (per_block < 1) throw std::invalid_argument("resize_axis_spans: the block size must be positive");
  static const double kRadius[] = {0.0, 1.0, 2.0, 3.0, 1.0, 1.5};  // per filter kind, before stretching
  const int64_t M = 2 * n;
  auto axes = I64Array::empty({M, 8}), lo = I64Array::empty({M}), hi = I64Array::empty({M});
  auto rois = F64Array::empty({M, 2});
  auto blocks = I64Array::empty({M + 1}), totals = I64Array::empty({4});
  int64_t n_start = 0, n_weight = 0, most_taps = 1;
  blocks.mutable_data()[0] = 0;
  for (int64_t k = 0; k < M; ++k) {
    const int64_t i = k / 2, axis = k % 2;  // sample, then y / x
    const int64_t in = src_shapes.data()[i * nd + nd - 3 + axis], out = dst_shapes.data()[i * nd + nd - 3 + axis];
    const double start = roi.data()[4 * i + axis], end = roi.data()[4 * i + 2 + axis];
    const int32_t minf = min_filter.data()[k], magf = mag_filter.data()[k];
    const double step = (end - start) / double(std::max<int64_t>(out, 1)), scale = std::abs(step);
    const int32_t kind = scale > 1 ? minf : magf;
    if (kind < 0 || kind > 5) throw std::invalid_argument("resize_axis_spans: unknown filter " + std::to_string(kind));
    const double stretch = scale > 1 && (antialias || kind == 4 || kind == 5) ? scale : 1.0;
    const double radius = kRadius[kind] * stretch;
    const int64_t t = std::max<int64_t>(1, kind == 0 ? 1 : std::min<int64_t>(in, int64_t(std::floor(2 * radius)) + 2));
    // the source range every output may read (before trimming), for the vertical pass's span
    const double c0 = start + 0.5 * step, c1 = start + (double(out - 1) + 0.5) * step;
    const double cmin = std::min(c0, c1), cmax = std::max(c0, c1);
    const double first = kind == 0 ? std::floor(cmin + 1e-7) : std::ceil(cmin - 0.5 - radius);
    const double last = kind == 0 ? std::floor(cmax + 1e-7) : std::floor(cmax - 0.5 + radius);
    const double top = double(std::max<int64_t>(in - 1, 0));
    int64_t* row = axes.mutable_data() + 8 * k;
    row[0] = in, row[1] = out, row[2] = minf, row[3] = magf, row[4] = t, row[5] = n_start, row[6] = n_weight, row[7] = 0;
    lo.mutable_data()[k] = int64_t(std::clamp(first, 0.0, top));
    hi.mutable_data()[k] = out > 0 ? int64_t(std::clamp(last, 0.0, top)) + 1 : lo.data()[k];
    rois.mutable_data()[2 * k] = start, rois.mutable_data()[2 * k + 1] = end;
    blocks.mutable_data()[k + 1] = blocks.data()[k] + (out + per_block - 1) / per_block;
    n_start += out;
    n_weight += out * t;
    most_taps = std::max(most_taps, t);
  }
  int64_t* total = totals.mutable_data();
  total[0] = n_start, total[1] = n_weight, total[2] = most_taps, total[3] = blocks.data()[M];
  return {axes, lo, hi, rois, blocks, totals};
}

ArrayTuple resize_pass_plan(I64Array src_shapes, I64Array dst_shapes, I64Array src_offsets, I64Array dst_offsets,
                            I64Array axes, I64Array lo, I64Array hi, int64_t tmp_budget, int64_t per_block) {
  const int64_t n = src_shapes.ndim() == 2 ? src_shapes.shape(0) : -1, nd = n >= 0 ? src_shapes.shape(1) : 0;
  if (n < 0 || nd < 3 || dst_shapes.ndim() != 2 || dst_shapes.shape(0) != n || dst_shapes.shape(1) != nd ||
      src_offsets.size() != n || dst_offsets.size() != n)
    throw std::invalid_argument("resize_pass_plan: shapes must be [N, nd >= 3] alike, offsets [N]");
  if (axes.ndim() != 2 || axes.shape(0) != 2 * n || axes.shape(1) != 8 || lo.size() != 2 * n || hi.size() != 2 * n)
    throw std::invalid_argument("resize_pass_plan: the axes must be [N * 2, 8] and their spans [N * 2]");
  if (tmp_budget < 1 || per_block < 1) throw std::invalid_argument("resize_pass_plan: budget and block size must be positive");
  const int64_t* in = src_shapes.data();
  const int64_t* out = dst_shapes.data();
  int64_t frames_total = 0;
  std::vector<int64_t> frames(n);
  for (int64_t i = 0; i < n; ++i) {
    frames[i] = 1;
    for (int64_t d = 0; d < nd - 3; ++d) frames[i] *= in[i * nd + d];
    frames_total += frames[i];
  }
  auto desc = I64Array::empty({frames_total, 16});
  std::vector<int64_t> tmp_size(frames_total), out_size(frames_total);
  int64_t* row = desc.mutable_data();
  for (int64_t i = 0, f = 0; i < n; ++i) {
    const int64_t* s = in + i * nd + nd - 3;
    const int64_t* o = out + i * nd + nd - 3;
    const int64_t c = s[2], span = std::max<int64_t>(hi.data()[2 * i + 1] - lo.data()[2 * i + 1], 0);
    for (int64_t k = 0; k < frames[i]; ++k, ++f, row += 16) {
      row[0] = src_offsets.data()[i] + k * s[0] * s[1] * c;
      row[1] = dst_offsets.data()[i] + k * o[0] * o[1] * c;
      row[3] = s[1], row[4] = c, row[5] = o[0], row[6] = o[1];
      row[7] = lo.data()[2 * i + 1], row[8] = span;
      for (int axis = 0; axis < 2; ++axis) {  // the axis's tap count, where its starts and weights begin
        const int64_t* spans = axes.data() + 8 * (2 * i + axis);
        row[9 + 3 * axis] = spans[4];
        row[10 + 3 * axis] = spans[5];
        row[11 + 3 * axis] = spans[6];
      }
      row[15] = 0;
      tmp_size[f] = o[0] * span * c;
      out_size[f] = o[0] * o[1] * c;
    }
  }
  // runs: a new one wherever the intermediates before a frame pass another multiple of the budget
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t before = 0, run_first = 0, tmp_most = 0, run_tmp = 0;
  for (int64_t f = 0; f < frames_total; ++f) {
    if (f > 0 && before / tmp_budget != (before - tmp_size[f - 1]) / tmp_budget) {
      runs.emplace_back(run_first, f);
      run_first = f, run_tmp = 0;
    }
    desc.mutable_data()[f * 16 + 2] = run_tmp;  // where the frame's rows start in the intermediate
    run_tmp += tmp_size[f];
    tmp_most = std::max(tmp_most, run_tmp);
    before += tmp_size[f];
  }
  if (frames_total) runs.emplace_back(run_first, frames_total);
  const int64_t r = int64_t(runs.size());
  auto v_blocks = I64Array::empty({frames_total + r}), h_blocks = I64Array::empty({frames_total + r});
  auto run_table = I64Array::empty({r, 5}), tmp_elements = I64Array::empty({1});
  int64_t at = 0;
  for (int64_t k = 0; k < r; ++k) {
    const auto [first, end] = runs[k];
    int64_t v = 0, h = 0;
    for (int64_t f = first; f <= end; ++f) {
      v_blocks.mutable_data()[at + f - first] = v;
      h_blocks.mutable_data()[at + f - first] = h;
      if (f < end) v += (tmp_size[f] + per_block - 1) / per_block, h += (out_size[f] + per_block - 1) / per_block;
    }
    int64_t* run = run_table.mutable_data() + 5 * k;
    run[0] = first, run[1] = end, run[2] = v, run[3] = h, run[4] = at;
    at += end - first + 1;
  }
  tmp_elements.mutable_data()[0] = tmp_most;
  return {desc, v_blocks, h_blocks, run_table, tmp_elements};
}

namespace {

// Per-sample value i of a column of [N] values or one value for all ([1]).
double column_at(const ArrayOf<double>& column, int64_t i) { return column.data()[column.size() == 1 ? 0 : i]; }

// The float output sizes `out` of one sample (DALI's rules, in its order: the size arguments and
// the mode, then resize_shorter / resize_longer, then max_size) from its ROI extents `ext` and
// requested sizes `req` ([S] each); `cap` [S] or null.
void float_sizes(const std::vector<double>& ext, const std::vector<double>& req, double shorter, double longer,
                 int64_t mode, const double* cap, double* out) {
  constexpr int64_t kDefault = 0, kStretch = 1, kNotLarger = 2;
  const int64_t s = int64_t(ext.size());
  double log_sum = 0, lowest = 0, highest = 0, min_safe = 0, max_safe = 0;
  int64_t given = 0;
  for (int64_t d = 0; d < s; ++d) {
    const double safe = ext[d] > 0 ? ext[d] : 1.0;
    min_safe = d == 0 ? safe : std::min(min_safe, safe);
    max_safe = d == 0 ? safe : std::max(max_safe, safe);
    if (req[d] > 0) {
      const double ratio = req[d] / safe;
      log_sum += std::log(ratio);
      lowest = given ? std::min(lowest, ratio) : ratio;
      highest = given ? std::max(highest, ratio) : ratio;
      ++given;
    }
  }
  const bool exact = mode == kStretch || (mode == kDefault && given == s);
  if (!given) {
    std::copy(ext.begin(), ext.end(), out);
  } else {
    // the scale that keeps the aspect: the geometric mean of the given axes' ratios, or their least
    // or greatest
    const double scale = mode == kDefault ? std::exp(log_sum / double(given)) : mode == kNotLarger ? lowest : highest;
    for (int64_t d = 0; d < s; ++d)
      out[d] = exact || (mode == kDefault && req[d] > 0) ? (req[d] > 0 ? req[d] : ext[d]) : ext[d] * scale;
  }
  const bool by_side = shorter != 0 || longer != 0;
  if (by_side) {
    const double side = shorter != 0 ? shorter / min_safe : longer / max_safe;
    for (int64_t d = 0; d < s; ++d) out[d] = ext[d] * side;
  }
  if (!cap) return;
  if (!exact || by_side || !given) {  // one scale for all axes: they shrink together
    double shrink = 1.0;
    for (int64_t d = 0; d < s; ++d) shrink = std::min(shrink, cap[d] / (out[d] > 0 ? out[d] : 1.0));
    for (int64_t d = 0; d < s; ++d) out[d] *= shrink;
  } else {
    for (int64_t d = 0; d < s; ++d) out[d] = std::min(out[d], cap[d]);
  }
}

}  // namespace

ArrayTuple resize_output_sizes(ArrayOf<double> regions, const std::vector<ArrayOf<double>>& requested,
                               ArrayOf<double> shorter, ArrayOf<double> longer, int64_t mode, ArrayOf<double> max_size,
                               bool subpixel_scale) {
  const int64_t s = int64_t(requested.size());
  const int64_t n = regions.ndim() == 2 && regions.shape(1) == 2 * s ? regions.shape(0) : -1;
  auto fits = [n](const ArrayOf<double>& column) {
    return column.ndim() == 1 && (column.size() == 1 || column.size() == n);
  };
  if (s < 1 || n < 0 || !fits(shorter) || !fits(longer) || !std::all_of(requested.begin(), requested.end(), fits))
    throw std::invalid_argument("resize_output_sizes: regions [N, 2S] for S >= 1 axes, and each size [N] or [1]");
  if (mode < 0 || mode > 3) throw std::invalid_argument("resize_output_sizes: mode must be 0 to 3");
  if (max_size.size() != 0 && max_size.size() != s)
    throw std::invalid_argument("resize_output_sizes: max_size needs one value per axis");
  std::vector<double> cap(max_size.size()), ext(s), req(s);
  for (int64_t d = 0; d < max_size.size(); ++d)
    cap[d] = max_size.data()[d] > 0 ? max_size.data()[d] : std::numeric_limits<double>::infinity();
  auto sizes = ArrayOf<double>::empty({n, s});
  auto whole = I64Array::empty({n, s});
  auto rois = ArrayOf<double>::empty({n, 2 * s});
  for (int64_t i = 0; i < n; ++i) {
    const double* region = regions.data() + 2 * s * i;
    for (int64_t d = 0; d < s; ++d) {
      ext[d] = std::abs(region[s + d] - region[d]);
      req[d] = std::abs(column_at(requested[d], i));
    }
    double* size = sizes.mutable_data() + s * i;
    float_sizes(ext, req, column_at(shorter, i), column_at(longer, i), mode, cap.empty() ? nullptr : cap.data(), size);
    int64_t* out = whole.mutable_data() + s * i;
    double* roi = rois.mutable_data() + 2 * s * i;
    for (int64_t d = 0; d < s; ++d) {
      out[d] = size[d] > 0 ? std::max<int64_t>(int64_t(std::floor(size[d] + 0.5)), 1) : 0;
      double start = region[d], end = region[s + d];
      if (subpixel_scale) {  // the exact scale: the region grows or shrinks about its centre
        const double ratio = size[d] > 0 ? double(out[d]) / size[d] : 1.0;
        const double centre = (start + end) / 2, half = (end - start) / 2 * ratio;
        start = centre - half, end = centre + half;
      }
      const bool flip = column_at(requested[d], i) < 0;
      roi[d] = flip ? end : start;
      roi[s + d] = flip ? start : end;
    }
  }
  return {sizes, whole, rois};
}

ArrayTuple resize_normalize_plan(I64Array mid_shapes, I64Array anchors, I64Array windows, ArrayOf<uint8_t> mirror,
                                 I64Array out_offsets, int64_t channel_out_dim, ArrayOf<float> fill,
                                 ArrayOf<float> mean, ArrayOf<float> std, double scale, double shift) {
  const int64_t n = mid_shapes.ndim() == 2 && mid_shapes.shape(1) == 3 ? mid_shapes.shape(0) : -1;
  const int64_t c = n > 0 ? mid_shapes.data()[2] : 0, out_channels = fill.size();
  if (n < 0 || anchors.ndim() != 2 || anchors.shape(0) != n || anchors.shape(1) != 2 || windows.ndim() != 2 ||
      windows.shape(0) != n || windows.shape(1) != 3 || mirror.size() != n || out_offsets.size() != n ||
      mean.size() != n * c || std.size() != n * c || out_channels < c || channel_out_dim < 0 || channel_out_dim > 2)
    throw std::invalid_argument("resize_normalize_plan: shapes [N, 3], anchors [N, 2], windows [N, 3], mirror and "
                                "offsets [N], mean and std [N, C], fill values for the output's channels");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t *shape = mid_shapes.data() + 3 * i, *anchor = anchors.data() + 2 * i, *window = windows.data() + 3 * i;
    for (int d = 0; d < 2; ++d)
      if (anchor[d] < 0 || anchor[d] + window[d] > shape[d]) return {};
  }
  const int64_t width = 1 + out_channels + 2 * c;
  auto rows = I64Array::empty({n, 8});
  auto norm = ArrayOf<float>::empty({n, width});
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = rows.mutable_data() + 8 * i;
    const int64_t *anchor = anchors.data() + 2 * i, *window = windows.data() + 3 * i;
    row[0] = out_offsets.data()[i], row[1] = anchor[0], row[2] = anchor[1], row[3] = window[0], row[4] = window[1];
    row[5] = mirror.data()[i] != 0, row[6] = out_channels, row[7] = channel_out_dim;
    float* values = norm.mutable_data() + width * i;
    values[0] = float(shift);
    std::copy(fill.data(), fill.data() + out_channels, values + 1);
    std::copy(mean.data() + c * i, mean.data() + c * (i + 1), values + 1 + out_channels);
    for (int64_t k = 0; k < c; ++k) {  // as crop_mirror_normalize_plan computes them
      const float deviation = std.data()[c * i + k];
      if (deviation == 0) throw std::invalid_argument("crop_mirror_normalize: std must not be 0");
      values[1 + out_channels + c + k] = float(scale / double(deviation));
    }
  }
  return {rows, norm};
}

}  // namespace penstock
