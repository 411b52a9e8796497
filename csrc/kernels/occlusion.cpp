// Occlusion augmentations: erase (fill axis-aligned boxes) and grid_mask (zero a rotated grid
// of squares, https://arxiv.org/abs/2001.04086).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/convert.h"
#include "kernels/occlusion.h"
#include "kernels/image_types.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float>;
constexpr int kMaxDims = 8;

// Fills box [lo, hi) of a sample with the fill value of each element's channel (fill[c] where
// c is the index along the last axis when there is more than one fill value).
template <typename T>
void fill_box(T* data, const int64_t* shape, int nd, const int64_t* lo, const int64_t* hi,
              const T* fill, int64_t nfill) {
  int64_t stride[kMaxDims], idx[kMaxDims];
  stride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  for (int d = 0; d < nd; ++d) {
    if (lo[d] >= hi[d]) return;
    idx[d] = lo[d];
  }
  const int last = nd - 1;
  while (true) {
    int64_t base = 0;
    for (int d = 0; d < last; ++d) base += idx[d] * stride[d];
    T* row = data + base;
    for (int64_t j = lo[last]; j < hi[last]; ++j) row[j] = fill[nfill > 1 ? j % nfill : 0];
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
    }
    if (d < 0) return;
  }
}

}  // namespace

// boxes: [R, 2 * ndim] int64 (start..., end...), clipped here to each sample;
// box_offsets: [N + 1] (sample i owns boxes box_offsets[i] .. box_offsets[i+1]);
// fill: 1 value, or one per channel (channels = last axis); [F] for every sample or [N, F] per sample.
void erase(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
           I64Array dst_offsets, I64Array boxes, I64Array box_offsets, F32Array fill) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  int nd = int(in.ndim);
  if (nd < 1 || nd > kMaxDims) throw std::invalid_argument("erase: samples must have 1-8 dimensions");
  if (boxes.ndim() != 2 || boxes.shape(1) != 2 * nd)
    throw std::invalid_argument("erase: boxes must be [R, 2 * ndim]");
  if (box_offsets.ndim() != 1 || box_offsets.shape(0) != n + 1)
    throw std::invalid_argument("erase: box_offsets must be [N + 1]");
  const int64_t* bo = box_offsets.data();
  for (int64_t i = 0; i < n; ++i)
    if (bo[i] < 0 || bo[i] > bo[i + 1] || bo[i + 1] > boxes.shape(0))
      throw std::invalid_argument("erase: box_offsets out of range");
  const bool per_sample = fill.ndim() == 2;
  int64_t nfill = per_sample ? fill.shape(1) : fill.size();
  if (nfill < 1) throw std::invalid_argument("erase: fill value is empty");
  if (per_sample && fill.shape(0) != n) throw std::invalid_argument("erase: per-sample fill values must be [N, F]");
  for (int64_t i = 0; i < n; ++i)
    if (nfill > 1 && in.shape(i)[nd - 1] != nfill)
      throw SampleError(i, "erase: " + std::to_string(nfill) + " fill values given for " +
                               std::to_string(in.shape(i)[nd - 1]) + " channels");
  const int64_t* bx = boxes.data();
  const float* fl = fill.data();
  PENSTOCK_DISPATCH_IMAGE(dtype, T, {
    pool.parallel_for(n, [&](int64_t i) {
      std::vector<T> fillv(nfill);
      const float* row = fl + (per_sample ? i * nfill : 0);
      for (int64_t c = 0; c < nfill; ++c) fillv[c] = convert_sat<T>(row[c]);
      const int64_t* shape = in.shape(i);
      T* d = out.sample<T>(i);
      if (d != in.sample<T>(i)) std::memcpy(d, in.sample<T>(i), in.volume(i) * sizeof(T));
      for (int64_t b = bo[i]; b < bo[i + 1]; ++b) {
        int64_t lo[kMaxDims], hi[kMaxDims];
        for (int k = 0; k < nd; ++k) {
          lo[k] = std::clamp<int64_t>(bx[b * 2 * nd + k], 0, shape[k]);
          hi[k] = std::clamp<int64_t>(bx[b * 2 * nd + nd + k], 0, shape[k]);
        }
        fill_box(d, shape, nd, lo, hi, fillv.data(), nfill);
      }
    });
  });
}

namespace {

// Fractional part; floats beyond 2^23 are whole numbers.
inline float grid_frac(float v) { return std::fabs(v) < 8388608.f ? v - float(floor_int(v)) : 0.f; }

template <typename T>
PENSTOCK_HOT_LOOP void mask_sample(const T* s, T* d, int64_t H, int64_t W, int64_t C, const float* q) {
  const float tile = q[0], ratio = q[1];
  const float ca = std::cos(q[2]) / tile, sa = std::sin(q[2]) / tile;
  const float sx = q[3] / tile, sy = q[4] / tile;
  for (int64_t y = 0; y < H; ++y) {
    const float uy = -sx - float(y) * sa, vy = -sy + float(y) * ca;
    for (int64_t x = 0; x < W; ++x, s += C, d += C) {
      const float u = uy + float(x) * ca, v = vy + float(x) * sa;
      const bool keep = grid_frac(u) >= ratio || grid_frac(v) >= ratio;
      for (int64_t c = 0; c < C; ++c) d[c] = keep ? s[c] : T(0);
    }
  }
}

}  // namespace

// Samples (H, W, C); params [N, 5] = tile, ratio, angle (radians), shift_x, shift_y.
// Pixel (x, y) in grid units: u = (x cos a - y sin a - shift_x) / tile,
// v = (x sin a + y cos a - shift_y) / tile; it is zeroed when frac(u) < ratio and
// frac(v) < ratio.
void grid_mask(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int dtype, Array dst,
               I64Array dst_offsets, F32Array params) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  if (in.ndim != 3) throw std::invalid_argument("grid_mask: samples must be (H, W, C)");
  if (params.ndim() != 2 || params.shape(0) != n || params.shape(1) != 5)
    throw std::invalid_argument("grid_mask: params must be [N, 5]");
  const float* p = params.data();
  for (int64_t i = 0; i < n; ++i)
    if (!(p[i * 5] > 0.f)) throw SampleError(i, "grid_mask: tile must be positive");
  PENSTOCK_DISPATCH_IMAGE(dtype, T, {
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t* shape = in.shape(i);
      mask_sample(in.sample<T>(i), out.sample<T>(i), shape[0], shape[1], shape[2], p + i * 5);
    });
  });
}

ArrayTuple erase_regions(I64Array sample_shapes, I64Array axes, ArrayOf<double> anchors, I64Array anchor_starts,
                         I64Array anchor_counts, ArrayOf<double> shapes, I64Array shape_starts, I64Array shape_counts,
                         bool normalized_anchor, bool normalized_shape, bool centered_anchor) {
  const int64_t n = sample_shapes.ndim() == 2 ? sample_shapes.shape(0) : -1, nd = n >= 0 ? sample_shapes.shape(1) : 0;
  const int64_t k = axes.size();
  auto per_sample = [n](const I64Array& a) { return a.ndim() == 1 && (a.size() == 1 || a.size() == n); };
  if (n < 0 || k < 1 || !per_sample(anchor_starts) || !per_sample(anchor_counts) || !per_sample(shape_starts) ||
      !per_sample(shape_counts))
    throw std::invalid_argument("erase_regions: shapes [N, nd], axes [k], starts and counts [N] or [1]");
  for (int64_t a = 0; a < k; ++a)
    if (axes.data()[a] < 0 || axes.data()[a] >= nd)
      throw std::invalid_argument("erase_regions: an axis is out of range");
  auto at = [](const I64Array& a, int64_t i) { return a.data()[a.size() == 1 ? 0 : i]; };
  auto box_offsets = I64Array::empty({n + 1});
  int64_t* first = box_offsets.mutable_data();
  first[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t count = at(shape_counts, i), anchor_count = at(anchor_counts, i);
    if (count % k || (anchor_count && anchor_count != count))
      throw std::invalid_argument("erase_regions: sample " + std::to_string(i) + "'s anchors and shapes do not "
                                  "hold k values a region");
    if (at(shape_starts, i) < 0 || at(shape_starts, i) + count > shapes.size() || at(anchor_starts, i) < 0 ||
        at(anchor_starts, i) + anchor_count > anchors.size())
      throw std::invalid_argument("erase_regions: a sample's values lie outside the arrays");
    first[i + 1] = first[i] + count / k;
  }
  auto boxes = I64Array::empty({first[n], 2 * nd});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* extent = sample_shapes.data() + nd * i;
    const double* shape = shapes.data() + at(shape_starts, i);
    const double* anchor = at(anchor_counts, i) ? anchors.data() + at(anchor_starts, i) : nullptr;
    for (int64_t r = 0; r < first[i + 1] - first[i]; ++r) {
      int64_t* box = boxes.mutable_data() + 2 * nd * (first[i] + r);
      for (int64_t d = 0; d < nd; ++d) box[d] = 0, box[nd + d] = extent[d];
      for (int64_t a = 0; a < k; ++a) {
        const int64_t d = axes.data()[a];
        const double size = shape[k * r + a] * (normalized_shape ? double(extent[d]) : 1.0);
        double start = (anchor ? anchor[k * r + a] : 0.0) * (normalized_anchor ? double(extent[d]) : 1.0);
        if (centered_anchor) start -= size / 2;
        box[d] = int64_t(std::floor(start)), box[nd + d] = int64_t(std::floor(start + size));
      }
    }
  }
  return {boxes, box_offsets};
}

}  // namespace penstock
