// Tensor creation (full, full_like): each sample of a batch of fill values is broadcast to the
// sample's output shape, shapes aligned at their last axes (DALI's rule): a fill extent of 1 is
// repeated; where the output's extent is 1, or the fill has more (leading) axes than the output,
// the fill's first index along that axis is taken. The kernel moves elements of any size; the fill
// values arrive already of the output type.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/tensor_creation.h"

namespace penstock {
namespace {

constexpr int kMaxDims = 16;

// dst[idx] = src[idx with broadcast axes at 0], one output row (last axis) at a time.
void broadcast_sample(const char* src, const int64_t* src_shape, int64_t src_nd, char* dst,
                      const int64_t* dst_shape, int64_t dst_nd, int64_t es) {
  int64_t vol = 1;
  for (int64_t d = 0; d < dst_nd; ++d) vol *= dst_shape[d];
  if (vol == 0) return;
  if (dst_nd == 0) {  // a scalar takes the first fill value
    std::memcpy(dst, src, es);
    return;
  }
  int64_t stride[kMaxDims];  // source element stride per output axis; 0 where broadcast
  int64_t s = 1;
  for (int64_t sd = src_nd - 1; sd >= 0; --sd) {
    int64_t d = sd + (dst_nd - src_nd);
    if (d >= 0) stride[d] = src_shape[sd] == 1 ? 0 : s;
    s *= src_shape[sd];
  }
  for (int64_t d = 0; d < dst_nd - src_nd; ++d) stride[d] = 0;  // axes the fill does not have
  const int64_t inner = dst_shape[dst_nd - 1], inner_stride = stride[dst_nd - 1];
  int64_t idx[kMaxDims] = {0};
  for (int64_t o = 0; o < vol; o += inner) {
    int64_t off = 0;
    for (int64_t d = 0; d < dst_nd - 1; ++d) off += idx[d] * stride[d];
    const char* row = src + off * es;
    char* out = dst + o * es;
    if (inner_stride == 1) {
      std::memcpy(out, row, inner * es);
    } else {  // one value along the row
      for (int64_t i = 0; i < inner; ++i) std::memcpy(out + i * es, row, es);
    }
    for (int64_t d = dst_nd - 2; d >= 0; --d) {
      if (++idx[d] < dst_shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void broadcast_samples(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                       I64Array dst_shapes, I64Array dst_offsets) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  if (in.num_samples != out.num_samples) throw std::invalid_argument("broadcast_samples: batch sizes differ");
  if (in.elem_size != out.elem_size) throw std::invalid_argument("broadcast_samples: element sizes differ");
  if (out.ndim > kMaxDims) throw std::invalid_argument("broadcast_samples: at most 16 dimensions");
  for (int64_t i = 0; i < out.num_samples; ++i) {
    bool ok = in.volume(i) > 0 || out.volume(i) == 0;
    for (int64_t d = 0; ok && d < std::min(in.ndim, out.ndim); ++d) {
      int64_t e = in.shape(i)[in.ndim - 1 - d], want = out.shape(i)[out.ndim - 1 - d];
      ok = e == 1 || e == want || want == 1;
    }
    if (!ok) throw SampleError(i, "broadcast_samples: the fill value's shape does not broadcast to the output's");
  }
  const int64_t es = out.elem_size;
  pool.parallel_for(out.num_samples, [&](int64_t i) {
    broadcast_sample(static_cast<const char*>(in.data) + in.offsets[i] * es, in.shape(i), in.ndim,
                     static_cast<char*>(out.data) + out.offsets[i] * es, out.shape(i), out.ndim, es);
  });
}

}  // namespace penstock
