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

}  // namespace penstock
