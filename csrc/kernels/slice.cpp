// N-d window copy over whole batches: output = input[anchor : anchor + out_shape] per dimension,
// optionally flipped per axis; output positions outside the input get a fill value chosen by the
// output's channel index. Serves crop, slice, pad and flip (flip = full window, flipped axes).
// Works on raw element bytes, so one instantiation handles every element type.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/slice.h"
#include "kernels/window.h"

namespace penstock {
namespace {

constexpr int kMaxDims = 8;

// Copies n units of `U` bytes from src, src - U, src - 2U ... (a reversed run).
template <int64_t U>
void copy_reversed_fixed(char* dst, const char* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * U, src - i * U, U);
}

void copy_reversed(char* dst, const char* src, int64_t n, int64_t unit) {
  switch (unit) {
    case 1: return copy_reversed_fixed<1>(dst, src, n);
    case 2: return copy_reversed_fixed<2>(dst, src, n);
    case 3: return copy_reversed_fixed<3>(dst, src, n);
    case 4: return copy_reversed_fixed<4>(dst, src, n);
    case 8: return copy_reversed_fixed<8>(dst, src, n);
    case 12: return copy_reversed_fixed<12>(dst, src, n);
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * unit, src - i * unit, unit);
  }
}

struct SliceArgs {
  int64_t nd, es;  // rank, element size
  const int64_t* in_shape;
  const int64_t* out_shape;
  const int64_t* anchor;
  const int64_t* flip;  // nonzero: flipped
  const char* fill;  // fill values, `num_fill` elements
  int64_t num_fill;
  int64_t channel_dim;  // -1: none
};

void slice_sample(const char* src, char* dst, const SliceArgs& a) {
  int64_t nd = a.nd, es = a.es;
  int64_t out_vol = 1;
  for (int64_t d = 0; d < nd; ++d) out_vol *= a.out_shape[d];
  if (out_vol == 0) return;
  // Trailing dims copied whole (full extent, no flip) form one contiguous unit.
  int64_t row_dim = nd - 1, unit = es;
  while (row_dim >= 0 && a.anchor[row_dim] == 0 && a.out_shape[row_dim] == a.in_shape[row_dim] &&
         !a.flip[row_dim]) {
    unit *= a.in_shape[row_dim];
    --row_dim;
  }
  if (row_dim < 0) {
    std::memcpy(dst, src, unit);
    return;
  }
  int64_t in_stride[kMaxDims] = {};  // bytes
  in_stride[nd - 1] = es;
  for (int64_t d = nd - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * a.in_shape[d + 1];
  AxisWindow win[kMaxDims];
  for (int64_t d = 0; d <= row_dim; ++d) win[d] = axis_window(a.anchor[d], a.out_shape[d], a.in_shape[d], a.flip[d]);

  // Fill rows: the fill pattern of one output row; one per channel value when the channel
  // dim is outside the row.
  int64_t row_elems = a.out_shape[row_dim] * (unit / es), row_bytes = row_elems * es;
  bool channel_outer = a.channel_dim >= 0 && a.channel_dim < row_dim;
  int64_t num_rows = channel_outer ? a.out_shape[a.channel_dim] : 1;
  int64_t ch_stride = 1;  // elements between consecutive channel indices within a row
  if (a.channel_dim >= row_dim)
    for (int64_t d = a.channel_dim + 1; d < nd; ++d) ch_stride *= a.out_shape[d];
  std::vector<char> fill_rows(num_rows * row_bytes);
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t p = 0; p < row_elems; ++p) {
      int64_t ch = channel_outer ? r : a.channel_dim >= row_dim ? (p / ch_stride) % a.out_shape[a.channel_dim] : 0;
      std::memcpy(&fill_rows[(r * row_elems + p) * es], a.fill + (a.num_fill == 1 ? 0 : ch) * es, es);
    }
  }

  const AxisWindow& rw = win[row_dim];
  int64_t idx[kMaxDims] = {0};
  int64_t num_out_rows = out_vol / row_elems;
  for (int64_t r = 0; r < num_out_rows; ++r) {
    char* out = dst + r * row_bytes;
    const char* fill_row = fill_rows.data() + (channel_outer ? idx[a.channel_dim] * row_bytes : 0);
    bool inside = true;
    int64_t off = 0;
    for (int64_t d = 0; d < row_dim && inside; ++d) {
      inside = win[d].inside(idx[d]);
      off += win[d].source(idx[d]) * in_stride[d];
    }
    if (!inside) {
      std::memcpy(out, fill_row, row_bytes);
    } else {
      const char* s = src + off + rw.src0 * in_stride[row_dim];
      int64_t n = rw.hi - rw.lo;
      std::memcpy(out, fill_row, rw.lo * unit);
      if (rw.step > 0) std::memcpy(out + rw.lo * unit, s, n * unit);
      else copy_reversed(out + rw.lo * unit, s, n, unit);
      std::memcpy(out + rw.hi * unit, fill_row + rw.hi * unit, row_bytes - rw.hi * unit);
    }
    for (int64_t d = row_dim - 1; d >= 0; --d) {  // odometer over the dims outside the row
      if (++idx[d] < a.out_shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

// anchors [N, ndim] (may be negative), flips [N, ndim] (nonzero: flipped), fill [N, F] in the data type:
// per sample 1 value or one per output channel (along channel_dim; -1 = no channel dim).
void slice(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst, I64Array dst_shapes,
           I64Array dst_offsets, I64Array anchors, I64Array flips, Array fill, int64_t channel_dim) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t N = in.num_samples, nd = in.ndim, es = in.elem_size;
  if (out.num_samples != N || out.ndim != nd || out.elem_size != es)
    throw std::invalid_argument("slice: input and output batches differ in size, rank or element type");
  if (nd < 1 || nd > kMaxDims) throw std::invalid_argument("slice: rank must be 1..8");
  if (anchors.ndim() != 2 || anchors.shape(0) != N || anchors.shape(1) != nd || flips.ndim() != 2 ||
      flips.shape(0) != N || flips.shape(1) != nd)
    throw std::invalid_argument("slice: anchors and flips must be [N, ndim]");
  if (fill.itemsize() != es || fill.ndim() != 2 || fill.shape(0) != N || fill.shape(1) < 1 || !fill.c_contiguous())
    throw std::invalid_argument("slice: fill values must be a contiguous [N, F] array of the data type");
  if (channel_dim >= nd) throw std::invalid_argument("slice: channel_dim out of range");
  int64_t num_fill = fill.shape(1);
  for (int64_t i = 0; i < N; ++i) {
    if (num_fill > 1 && (channel_dim < 0 || out.shape(i)[channel_dim] > num_fill))
      throw SampleError(i, "slice: " + std::to_string(num_fill) +
                               " fill values given; need 1 or one per output channel");
  }
  const int64_t* anc = anchors.data();
  const int64_t* fl = flips.data();
  const char* fill_p = static_cast<const char*>(fill.data());
  pool.parallel_for(N, [&](int64_t i) {
    SliceArgs a{nd, es, in.shape(i), out.shape(i), anc + i * nd, fl + i * nd, fill_p + i * num_fill * es,
                num_fill, channel_dim};
    slice_sample(static_cast<const char*>(in.data) + in.offsets[i] * es,
                 static_cast<char*>(out.data) + out.offsets[i] * es, a);
  });
}

I64Array slice_descriptors(I64Array src_shapes, I64Array src_offsets, I64Array dst_shapes, I64Array dst_offsets,
                           I64Array anchors, I64Array flips) {
  const int64_t n = src_shapes.ndim() == 2 ? src_shapes.shape(0) : -1, nd = n >= 0 ? src_shapes.shape(1) : 0;
  auto table = [n, nd](const Array& a) { return a.ndim() == 2 && a.shape(0) == n && a.shape(1) == nd; };
  if (n < 0 || nd > kMaxDims || !table(dst_shapes) || !table(anchors) || !table(flips) || src_offsets.size() != n ||
      dst_offsets.size() != n)
    throw std::invalid_argument("slice_descriptors: shapes, anchors and flips [N, nd] (nd <= 8), offsets [N]");
  constexpr int64_t kWidth = 4 + 3 * kMaxDims;
  auto desc = I64Array::empty({n, kWidth});
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = desc.mutable_data() + kWidth * i;
    const int64_t *in = src_shapes.data() + nd * i, *out = dst_shapes.data() + nd * i, *at = anchors.data() + nd * i;
    const int64_t* flip = flips.data() + nd * i;
    int64_t volume = 1, mask = 0;
    for (int64_t d = 0; d < nd; ++d) {
      volume *= out[d];
      mask |= int64_t(flip[d] != 0) << d;
    }
    row[0] = src_offsets.data()[i], row[1] = dst_offsets.data()[i], row[2] = volume, row[3] = mask;
    for (int64_t d = 0; d < kMaxDims; ++d) {
      row[4 + d] = d < nd ? in[d] : 1;
      row[4 + kMaxDims + d] = d < nd ? out[d] : 1;
      row[4 + 2 * kMaxDims + d] = d < nd ? at[d] : 0;
    }
  }
  return desc;
}

}  // namespace penstock
