// Fused crop + horizontal mirror + per-channel normalization + layout change + type conversion,
// in one pass over the output: out = (in - mean[c]) * (scale / std[c]) + shift.
// Input samples are channel-last [d0, ..., W, C]; every non-channel dim has a window (anchor from
// the caller, size from the output shape); window parts outside the input get fill_values[c] (as
// output values); pad_output appends one channel holding fill_values[C] everywhere. The output puts
// the channel dim at `channel_out_dim` (0 for CHW from HWC, ndim-1 to stay interleaved).
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/fast_convert.h"
#include "kernels/crop_mirror_normalize.h"
#include "kernels/window.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;
using U8Array = ArrayOf<uint8_t>;
constexpr int kMaxDims = 8;

struct CmnSample {
  int64_t nd;                   // input rank (channel last)
  const int64_t* in_shape;
  int64_t win[kMaxDims];        // window size per non-channel dim
  const int64_t* anchor;        // [nd - 1]
  bool mirror;
  const float* mean;
  const float* inv_std;         // scale / std
  float shift;
  const float* fill;            // [out_channels]
  int64_t out_channels;         // C (+1 with pad_output)
  int64_t channel_out_dim;
};

template <typename In, typename Out>
void cmn_sample(const In* src, Out* dst, const CmnSample& s) {
  int64_t nd = s.nd, C = s.in_shape[nd - 1], row_dim = nd - 2, W = s.win[row_dim];
  int64_t vol = 1;
  for (int64_t d = 0; d < nd - 1; ++d) vol *= s.win[d];
  if (vol == 0) return;
  // Output strides (elements) of each non-channel dim and of the channel.
  int64_t out_shape[kMaxDims] = {}, out_stride_full[kMaxDims] = {};
  for (int64_t d = 0, k = 0; d < nd; ++d)
    out_shape[d] = d == s.channel_out_dim ? s.out_channels : s.win[k++];
  out_stride_full[nd - 1] = 1;
  for (int64_t d = nd - 2; d >= 0; --d) out_stride_full[d] = out_stride_full[d + 1] * out_shape[d + 1];
  int64_t c_stride = out_stride_full[s.channel_out_dim], stride[kMaxDims] = {};
  for (int64_t d = 0, k = 0; d < nd; ++d)
    if (d != s.channel_out_dim) stride[k++] = out_stride_full[d];
  int64_t in_stride[kMaxDims] = {};
  in_stride[nd - 1] = 1;
  for (int64_t d = nd - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * s.in_shape[d + 1];
  AxisWindow win[kMaxDims];
  for (int64_t d = 0; d <= row_dim; ++d)
    win[d] = axis_window(s.anchor[d], s.win[d], s.in_shape[d], d == row_dim && s.mirror);

  // Each output row is computed in float in output order, then converted by one contiguous
  // loop per run (vectorizable, no data-dependent branches).
  const AxisWindow& rw = win[row_dim];
  bool interleaved = c_stride == 1;
  int64_t Cout = s.out_channels, bx = interleaved ? Cout : 1, bc = interleaved ? 1 : W;
  std::vector<float> buf(W * Cout);
  for (int64_t c = C; c < Cout; ++c)  // the pad channel: the same in every row
    for (int64_t x = 0; x < W; ++x) buf[c * bc + x * bx] = s.fill[c];
  int64_t idx[kMaxDims] = {0}, rows = vol / W;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t o = 0, off = 0;
    bool inside = true;
    for (int64_t d = 0; d < row_dim; ++d) {
      o += idx[d] * stride[d];
      inside = inside && win[d].inside(idx[d]);
      off += win[d].source(idx[d]) * in_stride[d];
    }
    int64_t lo = inside ? rw.lo : W, hi = inside ? rw.hi : W;
    const In* row = inside ? src + off + rw.src0 * C : src;
    int64_t step = rw.step * C;
    for (int64_t c = 0; c < C; ++c) {
      float* bcp = buf.data() + c * bc;
      const In* p = row + c;
      float m = s.mean[c], k = s.inv_std[c], sh = s.shift, f = s.fill[c];
      for (int64_t x = 0; x < lo; ++x) bcp[x * bx] = f;
      for (int64_t x = lo; x < hi; ++x, p += step) bcp[x * bx] = (float(*p) - m) * k + sh;
      for (int64_t x = hi; x < W; ++x) bcp[x * bx] = f;
    }
    if (interleaved) {
      convert_row<Out>(buf.data(), W * Cout, dst + o);
    } else {
      for (int64_t c = 0; c < Cout; ++c) convert_row<Out>(buf.data() + c * W, W, dst + o + c * c_stride);
    }
    for (int64_t d = row_dim - 1; d >= 0; --d) {
      if (++idx[d] < s.win[d]) break;
      idx[d] = 0;
    }
  }
}

#define PENSTOCK_DISPATCH_CMN_IN(code, T, ...)                                      \
  switch (static_cast<DType>(code)) {                                               \
    case DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }                   \
    case DType::INT16: { using T = int16_t; __VA_ARGS__; break; }                   \
    case DType::UINT16: { using T = uint16_t; __VA_ARGS__; break; }                 \
    case DType::FLOAT: { using T = float; __VA_ARGS__; break; }                     \
    default: throw std::invalid_argument("crop_mirror_normalize: unsupported input type " + dtype_name(code)); \
  }
#define PENSTOCK_DISPATCH_CMN_OUT(code, T, ...)                                     \
  switch (static_cast<DType>(code)) {                                               \
    case DType::UINT8: { using T = uint8_t; __VA_ARGS__; break; }                   \
    case DType::INT8: { using T = int8_t; __VA_ARGS__; break; }                     \
    case DType::INT16: { using T = int16_t; __VA_ARGS__; break; }                   \
    case DType::INT32: { using T = int32_t; __VA_ARGS__; break; }                   \
    case DType::FLOAT16: { using T = float16; __VA_ARGS__; break; }                 \
    case DType::FLOAT: { using T = float; __VA_ARGS__; break; }                     \
    default: throw std::invalid_argument("crop_mirror_normalize: unsupported output type " + dtype_name(code)); \
  }

}  // namespace

// anchors [N, ndim-1]; mirror [N]; mean, std [N, C]; fill_values [C (+1 with pad_output)].
void crop_mirror_normalize(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets,
                           int src_type, Array dst, I64Array dst_shapes, I64Array dst_offsets, int dst_type,
                           I64Array anchors, U8Array mirror, F32Array mean, F32Array std, float scale,
                           float shift, F32Array fill_values, int64_t channel_out_dim, bool pad_output) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t N = in.num_samples, nd = in.ndim;
  if (out.num_samples != N || out.ndim != nd) throw std::invalid_argument("crop_mirror_normalize: batch mismatch");
  if (nd < 2 || nd > kMaxDims) throw std::invalid_argument("crop_mirror_normalize: rank must be 2..8");
  if (channel_out_dim < 0 || channel_out_dim >= nd) throw std::invalid_argument("crop_mirror_normalize: bad channel_out_dim");
  if (anchors.ndim() != 2 || anchors.shape(0) != N || anchors.shape(1) != nd - 1 || mirror.ndim() != 1 ||
      mirror.shape(0) != N || mean.ndim() != 2 || mean.shape(0) != N || std.ndim() != 2 || std.shape(0) != N ||
      mean.shape(1) != std.shape(1) || fill_values.ndim() != 1)
    throw std::invalid_argument("crop_mirror_normalize: anchors [N, ndim-1], mirror [N], mean/std [N, C], fill [F]");
  int64_t pad = pad_output ? 1 : 0;
  std::vector<CmnSample> samples(N);
  std::vector<float> inv_std(std.size());
  for (int64_t i = 0; i < N; ++i) {
    const int64_t* is = in.shape(i);
    const int64_t* os = out.shape(i);
    int64_t C = is[nd - 1];
    if (mean.shape(1) != C)
      throw SampleError(i, "crop_mirror_normalize: mean/std need one value per channel (" + std::to_string(C) + ")");
    if (fill_values.shape(0) != C + pad)
      throw SampleError(i, "crop_mirror_normalize: fill_values need one value per output channel (" +
                               std::to_string(C + pad) + ")");
    if (os[channel_out_dim] != C + pad)
      throw SampleError(i, "crop_mirror_normalize: output channel count mismatch");
    CmnSample& s = samples[i];
    s.nd = nd;
    s.in_shape = is;
    for (int64_t d = 0, k = 0; d < nd; ++d)
      if (d != channel_out_dim) s.win[k++] = os[d];
    s.anchor = anchors.data() + i * (nd - 1);
    s.mirror = mirror.data()[i] != 0;
    s.mean = mean.data() + i * C;
    for (int64_t c = 0; c < C; ++c) {
      float sd = std.data()[i * C + c];
      if (sd == 0) throw SampleError(i, "crop_mirror_normalize: std must not be 0");
      inv_std[i * C + c] = float(double(scale) / double(sd));
    }
    s.inv_std = inv_std.data() + i * C;
    s.shift = shift;
    s.fill = fill_values.data();
    s.out_channels = C + pad;
    s.channel_out_dim = channel_out_dim;
  }
  PENSTOCK_DISPATCH_CMN_IN(src_type, In, {
    PENSTOCK_DISPATCH_CMN_OUT(dst_type, Out, {
      if (in.elem_size != int64_t(sizeof(In)) || out.elem_size != int64_t(sizeof(Out)))
        throw std::invalid_argument("crop_mirror_normalize: buffer element sizes do not match the given types");
      pool.parallel_for(N, [&](int64_t i) { cmn_sample<In, Out>(in.sample<In>(i), out.sample<Out>(i), samples[i]); });
    });
  });
}

ArrayTuple crop_mirror_normalize_plan(I64Array src_shapes, I64Array src_offsets, I64Array dst_shapes,
                                      I64Array dst_offsets, I64Array anchors, ArrayOf<uint8_t> mirror,
                                      ArrayOf<float> std, double scale, int64_t channel_out_dim) {
  constexpr int64_t kDims = 8, kRow = 4 + 3 * kDims;
  const int64_t n = src_shapes.ndim() == 2 ? src_shapes.shape(0) : -1, nd = n >= 0 ? src_shapes.shape(1) : 0;
  if (n < 0 || nd < 1 || nd - 1 > kDims || dst_shapes.ndim() != 2 || dst_shapes.shape(0) != n ||
      dst_shapes.shape(1) != nd || src_offsets.size() != n || dst_offsets.size() != n || mirror.size() != n ||
      anchors.ndim() != 2 || anchors.shape(0) != n || anchors.shape(1) != nd - 1)
    throw std::invalid_argument("crop_mirror_normalize_plan: shapes [N, nd <= 9] alike, offsets and mirror [N], "
                                "anchors [N, nd - 1]");
  if (channel_out_dim < 0 || channel_out_dim >= nd)
    throw std::invalid_argument("crop_mirror_normalize_plan: the channel dimension is out of range");
  auto desc = I64Array::empty({n, kRow});
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = desc.mutable_data() + i * kRow;
    const int64_t *in = src_shapes.data() + i * nd, *out = dst_shapes.data() + i * nd;
    const int64_t* anchor = anchors.data() + i * (nd - 1);
    int64_t volume = 1;
    for (int64_t d = 0; d < nd; ++d) volume *= out[d];
    row[0] = src_offsets.data()[i], row[1] = dst_offsets.data()[i], row[2] = mirror.data()[i] != 0, row[3] = volume;
    for (int64_t d = 0, w = 0; d < kDims; ++d) {
      row[4 + d] = d < nd - 1 ? in[d] : 1;
      row[4 + kDims + d] = d < nd - 1 ? anchor[d] : 0;
      if (w == channel_out_dim) ++w;  // the window's dimensions: the output's but its channels
      row[4 + 2 * kDims + d] = d < nd - 1 ? out[w++] : 1;
    }
  }
  auto inv_std = ArrayOf<float>::empty(std::vector<int64_t>(std.shape()));
  for (int64_t k = 0; k < std.size(); ++k) {
    if (std.data()[k] == 0) throw std::invalid_argument("crop_mirror_normalize: std must not be 0");
    inv_std.mutable_data()[k] = float(scale / double(std.data()[k]));
  }
  return {desc, inv_std};
}

}  // namespace penstock
