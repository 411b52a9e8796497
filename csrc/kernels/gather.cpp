// Packs separately allocated arrays back to back into one buffer: how a list of per-sample
// arrays from Python (external_source, worker shared memory) becomes a packed batch in one call.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/gather.h"

namespace penstock {
namespace {

constexpr int64_t kGatherGrain = 1 << 18;  // bytes per task when one sample is split

}  // namespace

// srcs[i] is copied to dst at byte offset dst_offsets[i]; the arrays must be C-contiguous.
void gather(ThreadPool& pool, std::vector<Array> srcs, I64Array dst_offsets, Array dst) {
  size_t n = srcs.size();
  if (int64_t(n) != dst_offsets.size()) throw std::invalid_argument("gather: one offset per source is needed");
  std::vector<const char*> ptrs(n);
  std::vector<int64_t> sizes(n);
  const int64_t* off = dst_offsets.data();
  int64_t capacity = dst.nbytes();
  for (size_t i = 0; i < n; ++i) {
    if (!srcs[i].c_contiguous()) throw std::invalid_argument("gather: a source is not contiguous");
    ptrs[i] = static_cast<const char*>(srcs[i].data());
    sizes[i] = srcs[i].nbytes();
    if (off[i] < 0 || off[i] + sizes[i] > capacity) throw std::out_of_range("gather: destination too small");
  }
  char* d = static_cast<char*>(dst.mutable_data());
  // Work items: (source, begin, end) chunks, so one large sample spreads over the threads too.
  std::vector<int64_t> item_src, item_begin;
  for (size_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < sizes[i] || (b == 0 && sizes[i] == 0); b += kGatherGrain) {
      item_src.push_back(int64_t(i));
      item_begin.push_back(b);
      if (sizes[i] == 0) break;
    }
  pool.parallel_for(int64_t(item_src.size()), [&](int64_t k) {
    int64_t i = item_src[k], b = item_begin[k];
    int64_t e = std::min(sizes[i], b + kGatherGrain);
    if (e > b) std::memcpy(d + off[i] + b, ptrs[i] + b, e - b);
  });
}

// Copies counts[i] bytes of src from byte src_offsets[i] to dst at byte dst_offsets[i], for every
// range at once (frames of sequences reordered or picked: sequence_rearrange, element_extract).
void copy_ranges(ThreadPool& pool, Array src, I64Array src_offsets, Array dst, I64Array dst_offsets,
                 I64Array counts) {
  int64_t n = counts.size();
  if (src_offsets.size() != n || dst_offsets.size() != n)
    throw std::invalid_argument("copy_ranges: one source and one destination offset per range are needed");
  const int64_t *so = src_offsets.data(), *dof = dst_offsets.data(), *cnt = counts.data();
  int64_t src_bytes = src.nbytes(), dst_bytes = dst.nbytes();
  for (int64_t i = 0; i < n; ++i)
    if (cnt[i] < 0 || so[i] < 0 || dof[i] < 0 || so[i] + cnt[i] > src_bytes || dof[i] + cnt[i] > dst_bytes)
      throw std::out_of_range("copy_ranges: a range lies outside its buffer");
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(dst.mutable_data());
  pool.parallel_for(n, [&](int64_t i) { std::memcpy(d + dof[i], s + so[i], cnt[i]); });
}

}  // namespace penstock
