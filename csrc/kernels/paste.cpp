// multi_paste: each output sample is a canvas of zeros onto which regions of input samples are
// copied in order (a later region covers an earlier one), converted to the output type (rounding
// half away from zero, saturating). Samples are (frames, H, W, C); a region is copied in every frame.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/convert.h"
#include "engine/dtype.h"
#include "kernels/paste.h"

namespace penstock {
namespace {

// One region: which input batch and where its sample starts (elements), the source sample's
// (H, W), the source and output anchors (y, x) and the region's (h, w).
enum RegionField { kBatch, kSrcOffset, kSrcH, kSrcW, kInY, kInX, kOutY, kOutX, kH, kW, kRegionFields };

// One output sample; one function per pair of types, chosen once per call.
using PasteSample = void (*)(const std::vector<const void*>& sources, void* out, const int64_t* shape,
                             const int64_t* regions, int64_t first, int64_t last);

template <typename In, typename Out>
void paste_sample(const std::vector<const void*>& sources, void* out_data, const int64_t* shape,
                  const int64_t* regions, int64_t first, int64_t last) {
  auto* out = static_cast<Out*>(out_data);
  const int64_t frames = shape[0], oh = shape[1], ow = shape[2], c = shape[3];
  std::fill(out, out + frames * oh * ow * c, Out(0));
  for (int64_t r = first; r < last; ++r) {
    const int64_t* g = regions + r * kRegionFields;
    const In* src = static_cast<const In*>(sources[g[kBatch]]) + g[kSrcOffset];
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t y = 0; y < g[kH]; ++y) {
        const In* s = src + ((f * g[kSrcH] + g[kInY] + y) * g[kSrcW] + g[kInX]) * c;
        Out* d = out + ((f * oh + g[kOutY] + y) * ow + g[kOutX]) * c;
        for (int64_t k = 0; k < g[kW] * c; ++k) d[k] = convert_sat<Out>(s[k]);
      }
  }
}

}  // namespace

// sources: the input batches' buffers (one type); dst_shapes [N, 4] (frames, H, W, C); regions
// [R, 10] in paste order, those of output sample i being [region_start[i], region_start[i + 1]).
void multi_paste(ThreadPool& pool, std::vector<Array> sources, int src_type, Array dst, I64Array dst_shapes,
                 I64Array dst_offsets, int dst_type, I64Array regions, I64Array region_start) {
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  const int64_t n = out.num_samples;
  if (out.ndim != 4) throw std::invalid_argument("multi_paste: output samples must be (frames, H, W, C)");
  if (region_start.size() != n + 1 || regions.ndim() != 2 || regions.shape(1) != kRegionFields)
    throw std::invalid_argument("multi_paste: regions must be [R, 10] with N + 1 region starts");
  const int64_t* g = regions.data();
  const int64_t* start = region_start.data();
  if (start[0] != 0 || start[n] != regions.shape(0))
    throw std::invalid_argument("multi_paste: region starts do not cover the regions");
  std::vector<const void*> data;
  std::vector<int64_t> sizes;
  for (auto& s : sources) {
    data.push_back(s.data());
    sizes.push_back(s.size());
  }
  for (int64_t i = 0; i < n; ++i) {
    if (start[i + 1] < start[i]) throw std::invalid_argument("multi_paste: region starts must not decrease");
    const int64_t* s = out.shape(i);
    for (int64_t r = start[i]; r < start[i + 1]; ++r) {
      const int64_t* q = g + r * kRegionFields;
      bool ok = q[kBatch] >= 0 && q[kBatch] < int64_t(data.size()) && q[kH] >= 0 && q[kW] >= 0 && q[kInY] >= 0 &&
                q[kInX] >= 0 && q[kInY] + q[kH] <= q[kSrcH] && q[kInX] + q[kW] <= q[kSrcW] && q[kOutY] >= 0 &&
                q[kOutX] >= 0 && q[kOutY] + q[kH] <= s[1] && q[kOutX] + q[kW] <= s[2] && q[kSrcOffset] >= 0 &&
                q[kSrcOffset] + s[0] * q[kSrcH] * q[kSrcW] * s[3] <= sizes[q[kBatch]];
      if (!ok) throw SampleError(i, "multi_paste: region " + std::to_string(r - start[i]) + " is out of bounds");
    }
  }
  PasteSample paste;
  PENSTOCK_DISPATCH_NUMERIC(src_type, In, {
    PENSTOCK_DISPATCH_NUMERIC(dst_type, Out, paste = &paste_sample<In, Out>);
  });
  pool.parallel_for(n, [&](int64_t i) { paste(data, out.sample_bytes(i), out.shape(i), g, start[i], start[i + 1]); });
}

}  // namespace penstock
