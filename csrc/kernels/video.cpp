// Colour conversion of decoded video frames (operators/_video_codec.py): 8-bit 4:2:0 YCbCr planes
// as FFmpeg decodes them to interleaved RGB, every frame of a sample in one call, rows split over
// the pool, GIL released. Chroma is upsampled bilinearly from sample positions centred between
// the luma samples, then BT.601 applied for the frame's range (limited: luma 16..235; full: JPEG's),
// in float and rounded: what DALI's decoders give. csrc/cuda/video.cu converts NVDEC's frames alike.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/module.h"

namespace penstock {
namespace {

using U64Array = py::array_t<uint64_t, py::array::c_style>;

inline uint8_t to_u8(float v) { return uint8_t(std::min(std::max(v + 0.5f, 0.f), 255.f)); }

// frame k: planes at y_addr/u_addr/v_addr[k] with rows y_pitch/c_pitch[k] bytes apart -> height x width x 3
// at dst_addr[k]; full_range[k] selects the matrix.
void yuv420_to_rgb(ThreadPool& pool, U64Array y_addr, U64Array u_addr, U64Array v_addr, I64Array y_pitch,
                   I64Array c_pitch, I64Array heights, I64Array widths, I64Array full_range, U64Array dst_addr) {
  const int64_t n = y_addr.size();
  for (auto* a : {&u_addr, &v_addr, &dst_addr})
    if (a->size() != n) throw std::invalid_argument("yuv420_to_rgb: one address per frame and plane is needed");
  for (auto* a : {&y_pitch, &c_pitch, &heights, &widths, &full_range})
    if (a->size() != n) throw std::invalid_argument("yuv420_to_rgb: one value per frame is needed");
  std::vector<int64_t> row_start(n + 1, 0);
  for (int64_t k = 0; k < n; ++k) row_start[k + 1] = row_start[k] + heights.data()[k];
  const uint64_t *ya = y_addr.data(), *ua = u_addr.data(), *va = v_addr.data(), *da = dst_addr.data();
  const int64_t *yp = y_pitch.data(), *cp = c_pitch.data(), *hs = heights.data(), *ws = widths.data(),
                *fr = full_range.data();
  py::gil_scoped_release nogil;
  pool.parallel_for(row_start[n], [&](int64_t row) {
    const int64_t k = std::upper_bound(row_start.begin(), row_start.end(), row) - row_start.begin() - 1;
    const int64_t y = row - row_start[k], w = ws[k], h = hs[k], cw = (w + 1) / 2, ch = (h + 1) / 2;
    const uint8_t* luma = reinterpret_cast<const uint8_t*>(ya[k]) + y * yp[k];
    const uint8_t* cb = reinterpret_cast<const uint8_t*>(ua[k]);
    const uint8_t* cr = reinterpret_cast<const uint8_t*>(va[k]);
    uint8_t* out = reinterpret_cast<uint8_t*>(da[k]) + y * w * 3;
    // the chroma rows around this luma row, and the weight of the lower one
    const float cy = (y + 0.5f) * 0.5f - 0.5f;
    const int64_t r0 = std::clamp<int64_t>(int64_t(std::floor(cy)), 0, ch - 1), r1 = std::min(r0 + 1, ch - 1);
    const float fy = cy >= 0.f ? cy - std::floor(cy) : 0.f;
    const bool full = fr[k] != 0;
    for (int64_t x = 0; x < w; ++x) {
      const float cx = (x + 0.5f) * 0.5f - 0.5f;
      const int64_t c0 = std::clamp<int64_t>(int64_t(std::floor(cx)), 0, cw - 1), c1 = std::min(c0 + 1, cw - 1);
      const float fx = cx >= 0.f ? cx - std::floor(cx) : 0.f;
      auto sample = [&](const uint8_t* plane) {
        const uint8_t* a = plane + r0 * cp[k];
        const uint8_t* b = plane + r1 * cp[k];
        const float top = a[c0] + (a[c1] - a[c0]) * fx, bottom = b[c0] + (b[c1] - b[c0]) * fx;
        return top + (bottom - top) * fy - 128.f;
      };
      const float u = sample(cb), v = sample(cr);
      float l = luma[x], r, g, bl;
      if (full) {
        r = l + 1.402f * v;
        g = l - 0.344136f * u - 0.714136f * v;
        bl = l + 1.772f * u;
      } else {
        l = 1.164383f * (l - 16.f);
        r = l + 1.596027f * v;
        g = l - 0.391762f * u - 0.812968f * v;
        bl = l + 2.017232f * u;
      }
      out[x * 3] = to_u8(r);
      out[x * 3 + 1] = to_u8(g);
      out[x * 3 + 2] = to_u8(bl);
    }
  });
}

}  // namespace
}  // namespace penstock

PENSTOCK_BINDINGS(video) {
  using namespace penstock;
  m.def("yuv420_to_rgb", &yuv420_to_rgb,
        "Decoded 4:2:0 video frames to interleaved RGB (bilinear chroma, BT.601), every frame in one call",
        py::arg("pool"), py::arg("y_addr"), py::arg("u_addr"), py::arg("v_addr"), py::arg("y_pitch"),
        py::arg("c_pitch"), py::arg("heights"), py::arg("widths"), py::arg("full_range"), py::arg("dst_addr"));
}
