// Data movement over whole batches: packed copy, per-sample transpose, and concatenation of
// several batches along one axis (cat; stack is cat over an inserted unit axis).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/layout.h"

namespace penstock {
namespace {

constexpr int64_t kCopyGrain = 1 << 18;  // bytes per task

}  // namespace

void copy(ThreadPool& pool, Array src, Array dst) {
  if (src.nbytes() != dst.nbytes()) throw std::invalid_argument("copy: buffer sizes differ");
  auto* s = static_cast<const char*>(src.data());
  auto* d = static_cast<char*>(dst.mutable_data());
  int64_t n = src.nbytes();
  pool.parallel_range(n, kCopyGrain, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, e - b); });
}

namespace {

template <int64_t ES>
void transpose_sample(const char* src, char* dst, const int64_t* in_shape, int64_t nd,
                      const int64_t* perm) {
  int64_t in_stride[8], out_shape[8] = {}, src_stride[8] = {};  // nd is 1..8
  in_stride[nd - 1] = 1;
  for (int64_t d = nd - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * in_shape[d + 1];
  int64_t vol = 1;
  for (int64_t d = 0; d < nd; ++d) {
    out_shape[d] = in_shape[perm[d]];
    src_stride[d] = in_stride[perm[d]];
    vol *= out_shape[d];
  }
  if (vol == 0) return;
  int64_t idx[8] = {0};
  int64_t inner = out_shape[nd - 1], inner_stride = src_stride[nd - 1];
  for (int64_t o = 0; o < vol; o += inner) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd - 1; ++d) off += idx[d] * src_stride[d];
    const char* s = src + off * ES;
    char* dd = dst + o * ES;
    for (int64_t i = 0; i < inner; ++i) std::memcpy(dd + i * ES, s + i * inner_stride * ES, ES);
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void transpose(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets,
               std::vector<int64_t> perm, Array dst, I64Array dst_shapes, I64Array dst_offsets) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t nd = in.ndim;
  if (int64_t(perm.size()) != nd || nd > 8 || nd < 1) throw std::invalid_argument("transpose: bad permutation");
  int64_t es = in.elem_size;
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    auto* s = static_cast<const char*>(in.data) + in.offsets[i] * es;
    auto* d = static_cast<char*>(out.data) + out.offsets[i] * es;
    switch (es) {
      case 1: transpose_sample<1>(s, d, in.shape(i), nd, perm.data()); break;
      case 2: transpose_sample<2>(s, d, in.shape(i), nd, perm.data()); break;
      case 4: transpose_sample<4>(s, d, in.shape(i), nd, perm.data()); break;
      case 8: transpose_sample<8>(s, d, in.shape(i), nd, perm.data()); break;
      default: throw std::invalid_argument("transpose: unsupported element size");
    }
  });
}

// inputs: list of (data, shapes, offsets) with equal ndim; axis < ndim.
void concat(ThreadPool& pool, std::vector<Array> datas, std::vector<I64Array> shapes,
            std::vector<I64Array> offsets, int64_t axis, Array dst, I64Array dst_shapes,
            I64Array dst_offsets) {
  size_t k = datas.size();
  std::vector<BatchView> ins;
  for (size_t j = 0; j < k; ++j) ins.push_back(make_batch_view(datas[j], shapes[j], offsets[j], false));
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  int64_t es = out.elem_size;
  pool.parallel_for(out.num_samples, [&](int64_t i) {
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.shape(i)[d];
    char* d = static_cast<char*>(out.data) + out.offsets[i] * es;
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t j = 0; j < k; ++j) {
        const BatchView& in = ins[j];
        int64_t block = 1;
        for (int64_t dd = axis; dd < in.ndim; ++dd) block *= in.shape(i)[dd];
        const char* s = static_cast<const char*>(in.data) + (in.offsets[i] + o * block) * es;
        std::memcpy(d, s, block * es);
        d += block * es;
      }
    }
  });
}

I64Array transpose_descriptors(I64Array src_shapes, I64Array src_offsets, std::vector<int64_t> perm,
                               I64Array dst_offsets) {
  constexpr int64_t kMaxDims = 8, kWidth = 3 + 2 * kMaxDims;
  const int64_t n = src_shapes.ndim() == 2 ? src_shapes.shape(0) : -1, nd = n >= 0 ? src_shapes.shape(1) : 0;
  std::vector<bool> seen(nd, false);
  bool permutation = int64_t(perm.size()) == nd;
  for (int64_t p : perm) {
    permutation = permutation && p >= 0 && p < nd && !seen[p];
    if (permutation) seen[p] = true;
  }
  if (n < 0 || nd > kMaxDims || !permutation || src_offsets.size() != n || dst_offsets.size() != n)
    throw std::invalid_argument(
        "transpose_descriptors: shapes [N, nd <= 8], a permutation of the nd dims, offsets [N]");
  auto desc = I64Array::empty({n, kWidth});
  int64_t strides[kMaxDims];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* shape = src_shapes.data() + nd * i;
    int64_t* row = desc.mutable_data() + kWidth * i;
    int64_t volume = 1;
    for (int64_t d = nd - 1; d >= 0; --d) strides[d] = volume, volume *= shape[d];
    row[0] = src_offsets.data()[i], row[1] = dst_offsets.data()[i], row[2] = volume;
    for (int64_t d = 0; d < kMaxDims; ++d) {
      row[3 + d] = d < nd ? shape[perm[d]] : 1;
      row[3 + kMaxDims + d] = d < nd ? strides[perm[d]] : 0;
    }
  }
  return desc;
}

}  // namespace penstock
