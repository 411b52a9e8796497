// box_encoder: SSD matching of ground-truth boxes to anchors, a batch at a time.
//
// Every box claims its best anchor (IoU forced to 2, ties to the later anchor); every anchor
// then takes its best box (ties to the later box) when that IoU exceeds `criteria`. Outputs are
// centre-format boxes [cx, cy, w, h]: the matched box (or its normalized offset from the
// anchor), unmatched anchors keep the anchor itself (zeros when offsets are asked for), label 0.
#include <cmath>

#include "kernels/boxes.h"

namespace penstock {
namespace {

inline float iou(const float* a, const float* b) {
  float l = std::max(a[0], b[0]), t = std::max(a[1], b[1]);
  float r = std::min(a[2], b[2]), btm = std::min(a[3], b[3]);
  if (r <= l || btm <= t) return 0.f;
  float inter = (r - l) * (btm - t);
  float ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return ua <= 0.f ? 0.f : inter / ua;
}

}  // namespace

void box_encoder(ThreadPool& pool, ArrayOf<float> boxes, I64Array box_counts, I64Array box_offsets,
                 ArrayOf<int32_t> labels, ArrayOf<float> anchors, float criteria, bool offset, float scale,
                 ArrayOf<float> means, ArrayOf<float> stds, ArrayOf<float> out_boxes, ArrayOf<int32_t> out_labels) {
  int64_t n = box_counts.shape(0);
  int64_t na = anchors.shape(0);
  if (anchors.ndim() != 2 || anchors.shape(1) != 4 || means.size() != 4 || stds.size() != 4 ||
      out_boxes.size() != n * na * 4 || out_labels.size() != n * na || box_offsets.shape(0) != n)
    throw std::invalid_argument("box_encoder: inconsistent argument sizes");
  const int64_t* cnt = box_counts.data();
  const int64_t* off = box_offsets.data();
  for (int64_t i = 0; i < n; ++i)
    if (off[i] < 0 || off[i] + cnt[i] > labels.size() || (off[i] + cnt[i]) * 4 > boxes.size())
      throw std::out_of_range("box_encoder: sample " + std::to_string(i) + " lies outside its buffer");
  const float* bx = boxes.data();
  const int32_t* lb = labels.data();
  const float* an = anchors.data();
  const float* mu = means.data();
  const float* sd = stds.data();
  float* ob = out_boxes.mutable_data();
  int32_t* ol = out_labels.mutable_data();
  pool.parallel_for(n, [&](int64_t s) {
    const float* b = bx + off[s] * 4;
    const int32_t* l = lb + off[s];
    int64_t m = cnt[s];
    float* o = ob + s * na * 4;
    int32_t* olab = ol + s * na;
    std::vector<float> best_iou(na, -1.f);
    std::vector<int64_t> best_box(na, -1);
    std::vector<float> row(na);
    for (int64_t k = 0; k < m; ++k) {
      int64_t best_a = 0;
      float best = -1.f;
      for (int64_t a = 0; a < na; ++a) {
        row[a] = iou(b + k * 4, an + a * 4);
        if (row[a] >= best) { best = row[a]; best_a = a; }
      }
      row[best_a] = 2.f;
      for (int64_t a = 0; a < na; ++a)
        if (row[a] >= best_iou[a]) { best_iou[a] = row[a]; best_box[a] = k; }
    }
    for (int64_t a = 0; a < na; ++a) {
      const float* A = an + a * 4;
      float acx = 0.5f * (A[0] + A[2]), acy = 0.5f * (A[1] + A[3]), aw = A[2] - A[0], ah = A[3] - A[1];
      float* out = o + a * 4;
      if (m > 0 && best_iou[a] > criteria) {
        const float* B = b + best_box[a] * 4;
        float cx = 0.5f * (B[0] + B[2]), cy = 0.5f * (B[1] + B[3]), w = B[2] - B[0], h = B[3] - B[1];
        if (offset) {
          out[0] = ((cx * scale - acx * scale) / (aw * scale) - mu[0]) / sd[0];
          out[1] = ((cy * scale - acy * scale) / (ah * scale) - mu[1]) / sd[1];
          out[2] = (std::log((w * scale) / (aw * scale)) - mu[2]) / sd[2];
          out[3] = (std::log((h * scale) / (ah * scale)) - mu[3]) / sd[3];
        } else {
          out[0] = cx; out[1] = cy; out[2] = w; out[3] = h;
        }
        olab[a] = l[best_box[a]];
      } else {
        if (offset) {
          out[0] = out[1] = out[2] = out[3] = 0.f;
        } else {
          out[0] = acx; out[1] = acy; out[2] = aw; out[3] = ah;
        }
        olab[a] = 0;
      }
    }
  });
}

}  // namespace penstock
