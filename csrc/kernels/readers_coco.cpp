// readers.coco pixelwise masks: each image's objects painted into an int32 [H, W, 1] label map,
// a batch at a time. Objects come as polygons (a pixel belongs to a polygon when its centre lies
// inside, even-odd rule) and/or run-length masks (COCO's column-major counts, starting with a run
// of zeros). Objects are painted in increasing label order, so overlaps show the larger label.
#include <algorithm>
#include <cmath>

#include "kernels/readers_coco.h"

namespace penstock {
namespace {

// Fills pixels whose centres lie inside the polygon with `label` (scanline, even-odd).
void fill_polygon(int32_t* mask, int64_t h, int64_t w, const float* xy, int64_t nv, int32_t label) {
  if (nv < 3) return;
  std::vector<double> xs;
  for (int64_t y = 0; y < h; ++y) {
    double cy = y + 0.5;
    xs.clear();
    for (int64_t k = 0; k < nv; ++k) {
      double x0 = xy[2 * k], y0 = xy[2 * k + 1];
      double x1 = xy[2 * ((k + 1) % nv)], y1 = xy[2 * ((k + 1) % nv) + 1];
      if ((y0 <= cy) != (y1 <= cy)) xs.push_back(x0 + (cy - y0) * (x1 - x0) / (y1 - y0));
    }
    std::sort(xs.begin(), xs.end());
    for (size_t k = 0; k + 1 < xs.size(); k += 2) {
      // pixel x is inside when x + 0.5 lies in [xs[k], xs[k+1])
      int64_t from = std::max<int64_t>(0, (int64_t)std::ceil(xs[k] - 0.5));
      int64_t to = std::min<int64_t>(w, (int64_t)std::ceil(xs[k + 1] - 0.5));
      for (int64_t x = from; x < to; ++x) mask[y * w + x] = label;
    }
  }
}

// Paints the set runs of a column-major run-length mask.
void fill_rle(int32_t* mask, int64_t h, int64_t w, const int64_t* counts, int64_t n, int32_t label) {
  int64_t pos = 0, total = h * w;
  for (int64_t k = 0; k < n && pos < total; ++k) {
    int64_t end = std::min(total, pos + counts[k]);
    if (k % 2 == 1)
      for (int64_t p = pos; p < end; ++p) mask[(p % h) * w + p / h] = label;
    pos = end;
  }
}

}  // namespace

// Per sample i: objects [obj_off[i], obj_off[i] + obj_cnt[i]) with labels obj_label; polygons
// (object index within the sample, first vertex, end vertex) in poly rows [poly_off[i], +poly_cnt[i]),
// vertices of sample i start at vert_off[i]; run-length masks (object index, first count, count
// number) in rle rows [rle_off[i], +rle_cnt[i]) over the flat `rle_counts`.
void coco_masks(ThreadPool& pool, ArrayOf<int32_t> out, I64Array out_offsets, I64Array heights, I64Array widths,
                ArrayOf<int32_t> labels, I64Array obj_off, I64Array obj_cnt, ArrayOf<int32_t> poly, I64Array poly_off,
                I64Array poly_cnt, ArrayOf<float> vertices, I64Array vert_off, I64Array rle, I64Array rle_off,
                I64Array rle_cnt, I64Array rle_counts) {
  int64_t n = heights.shape(0);
  const int64_t *H = heights.data(), *W = widths.data(), *oo = out_offsets.data();
  int64_t cap = out.size();
  for (int64_t i = 0; i < n; ++i)
    if (oo[i] < 0 || oo[i] + H[i] * W[i] > cap) throw std::out_of_range("coco_masks: output too small");
  int32_t* base = out.mutable_data();
  const int32_t *lab = labels.data(), *pl = poly.data();
  const int64_t *ob = obj_off.data(), *oc = obj_cnt.data(), *po = poly_off.data(), *pc = poly_cnt.data();
  const int64_t *vo = vert_off.data(), *rl = rle.data(), *ro = rle_off.data(), *rc = rle_cnt.data();
  const int64_t* counts = rle_counts.data();
  const float* vx = vertices.data();
  int64_t nverts = vertices.size() / 2, ncounts = rle_counts.size();
  pool.parallel_for(n, [&](int64_t i) {
    int64_t h = H[i], w = W[i];
    int32_t* mask = base + oo[i];
    std::fill(mask, mask + h * w, 0);
    std::vector<int64_t> order(oc[i]);
    for (int64_t k = 0; k < oc[i]; ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return lab[ob[i] + a] < lab[ob[i] + b]; });
    for (int64_t obj : order) {
      int32_t label = lab[ob[i] + obj];
      for (int64_t k = po[i]; k < po[i] + pc[i]; ++k) {
        if (pl[3 * k] != obj) continue;
        int64_t v0 = vo[i] + pl[3 * k + 1], v1 = vo[i] + pl[3 * k + 2];
        if (v0 < 0 || v1 > nverts || v1 < v0) throw SampleError(i, "polygon vertices out of range");
        fill_polygon(mask, h, w, vx + 2 * v0, v1 - v0, label);
      }
      for (int64_t k = ro[i]; k < ro[i] + rc[i]; ++k) {
        if (rl[3 * k] != obj) continue;
        if (rl[3 * k + 1] < 0 || rl[3 * k + 1] + rl[3 * k + 2] > ncounts)
          throw SampleError(i, "run-length mask out of range");
        fill_rle(mask, h, w, counts + rl[3 * k + 1], rl[3 * k + 2], label);
      }
    }
  });
}

}  // namespace penstock
