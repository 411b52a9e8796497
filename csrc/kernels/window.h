// Per-axis window arithmetic shared by slice and crop_mirror_normalize: output index x of a
// window [anchor, anchor + out) over an axis of `extent` reads source anchor + x, or
// anchor + out - 1 - x when flipped. Only outputs in [lo, hi) fall inside the source; there the
// source index is src0 + (x - lo) * step.
#pragma once
#include <algorithm>
#include <cstdint>

namespace penstock {

struct AxisWindow {
  int64_t lo = 0, hi = 0, src0 = 0, step = 1;
  bool inside(int64_t x) const { return x >= lo && x < hi; }
  int64_t source(int64_t x) const { return src0 + (x - lo) * step; }
};

inline AxisWindow axis_window(int64_t anchor, int64_t out, int64_t extent, bool flip) {
  AxisWindow w;
  if (!flip) {
    w.lo = std::clamp<int64_t>(-anchor, 0, out);
    w.hi = std::clamp<int64_t>(extent - anchor, w.lo, out);
    w.src0 = anchor + w.lo;
    w.step = 1;
  } else {
    w.lo = std::clamp<int64_t>(anchor + out - extent, 0, out);
    w.hi = std::clamp<int64_t>(anchor + out, w.lo, out);
    w.src0 = anchor + out - 1 - w.lo;
    w.step = -1;
  }
  return w;
}

}  // namespace penstock
