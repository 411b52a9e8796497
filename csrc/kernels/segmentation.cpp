// Connected components of label maps (face connectivity, any number of dims), a batch at a time:
// the objects of segmentation.random_object_bbox. Pixels equal to `background` belong to no
// object; neighbouring pixels join when their labels are equal (or always, with `merge_classes`).
#include <numeric>

#include "kernels/segmentation.h"

namespace penstock {
namespace {

struct Objects {
  std::vector<int64_t> label, size, lo, hi;  // lo/hi: [objects, ndim], hi exclusive
};

int64_t find(std::vector<int64_t>& parent, int64_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

Objects label_sample(const int64_t* data, const int64_t* shape, int64_t nd, int64_t background,
                     bool merge_classes) {
  int64_t vol = 1;
  for (int64_t d = 0; d < nd; ++d) vol *= shape[d];
  std::vector<int64_t> stride(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  std::vector<int64_t> parent(vol);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int64_t> idx(nd, 0);
  auto same = [&](int64_t a, int64_t b) {
    return data[b] != background && (merge_classes || data[a] == data[b]);
  };
  for (int64_t p = 0; p < vol; ++p) {
    if (data[p] != background) {
      for (int64_t d = 0; d < nd; ++d) {  // join with the previous neighbour along each axis
        if (idx[d] == 0) continue;
        int64_t q = p - stride[d];
        if (same(p, q)) {
          int64_t a = find(parent, p), b = find(parent, q);
          if (a != b) parent[std::max(a, b)] = std::min(a, b);
        }
      }
    }
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  Objects out;
  std::vector<int64_t> id(vol, -1);
  std::fill(idx.begin(), idx.end(), 0);
  for (int64_t p = 0; p < vol; ++p) {
    if (data[p] != background) {
      int64_t r = find(parent, p);
      if (id[r] < 0) {
        id[r] = static_cast<int64_t>(out.size.size());
        out.label.push_back(data[r]);
        out.size.push_back(0);
        for (int64_t d = 0; d < nd; ++d) {
          out.lo.push_back(idx[d]);
          out.hi.push_back(idx[d] + 1);
        }
      }
      int64_t k = id[r];
      out.size[k]++;
      for (int64_t d = 0; d < nd; ++d) {
        out.lo[k * nd + d] = std::min(out.lo[k * nd + d], idx[d]);
        out.hi[k * nd + d] = std::max(out.hi[k * nd + d], idx[d] + 1);
      }
    }
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

ConnectedComponents connected_components(ThreadPool& pool, I64Array data, I64Array shapes, I64Array offsets,
                                         int64_t background, bool merge_classes) {
  BatchView v = make_batch_view(data, shapes, offsets, false);
  int64_t n = v.num_samples, nd = v.ndim;
  std::vector<Objects> objs(n);
  pool.parallel_for(n, [&](int64_t i) {
    objs[i] = label_sample(v.sample<int64_t>(i), v.shape(i), nd, background, merge_classes);
  });
  int64_t total = 0;
  for (auto& o : objs) total += o.size.size();
  auto counts = I64Array::empty({n}), labels = I64Array::empty({total}), sizes = I64Array::empty({total});
  auto lo = I64Array::empty({total, nd}), hi = I64Array::empty({total, nd});
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Objects& o = objs[i];
    int64_t m = o.size.size();
    counts.mutable_data()[i] = m;
    std::copy(o.label.begin(), o.label.end(), labels.mutable_data() + at);
    std::copy(o.size.begin(), o.size.end(), sizes.mutable_data() + at);
    std::copy(o.lo.begin(), o.lo.end(), lo.mutable_data() + at * nd);
    std::copy(o.hi.begin(), o.hi.end(), hi.mutable_data() + at * nd);
    at += m;
  }
  return {counts, labels, sizes, lo, hi};
}

}  // namespace penstock
