// Colour conversion of decoded video frames (operators/_video_codec.py): 4:2:0 YCbCr planes as
// FFmpeg decodes them (8-bit, or 10/12-bit in little-endian 16-bit samples) to interleaved RGB,
// every frame of a sample in one call, rows split over the pool, GIL released. Samples are taken
// in 8-bit levels (a 10-bit sample / 4), chroma is upsampled bilinearly from sample positions
// centred between the luma samples, then BT.601 applied for the frame's range (limited: luma
// 16..235; full: JPEG's), in float and rounded: what DALI's decoders give. csrc/cuda/video.cu
// converts NVDEC's frames alike.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/video.h"

namespace penstock {
namespace {

inline uint8_t to_u8(float v) { return uint8_t(std::min(std::max(v + 0.5f, 0.f), 255.f)); }

// Where chroma sample positions (centred between luma samples) put luma index i of n: the two
// chroma samples around it and the weight of the second.
struct Tap {
  int32_t first, second;
  float weight;
};

inline Tap tap(int64_t i, int64_t chroma_count) {
  const float c = (i + 0.5f) * 0.5f - 0.5f;
  if (c < 0.f) return {0, 0, 0.f};
  const int32_t first = int32_t(std::min<int64_t>(int64_t(c), chroma_count - 1));
  return {first, int32_t(std::min<int64_t>(first + 1, chroma_count - 1)), c - std::floor(c)};
}

// sample i of a plane row in 8-bit levels: a byte (scale 0), or a little-endian 16-bit sample
// times `scale` (1 / 2^(bits - 8))
inline float level(const uint8_t* row, int64_t i, float scale) {
  if (scale == 0.f) return row[i];
  uint16_t v;
  std::memcpy(&v, row + 2 * i, 2);
  return float(v) * scale;
}

}  // namespace

// frame k: planes at y_addr/u_addr/v_addr[k] with rows y_pitch/c_pitch[k] bytes apart, samples of
// bit_depth[k] bits -> height x width x 3 at dst_addr[k]; full_range[k] selects the matrix.
void yuv420_to_rgb(ThreadPool& pool, ArrayOf<uint64_t> y_addr, ArrayOf<uint64_t> u_addr, ArrayOf<uint64_t> v_addr,
                   I64Array y_pitch, I64Array c_pitch, I64Array heights, I64Array widths, I64Array full_range,
                   I64Array bit_depth, ArrayOf<uint64_t> dst_addr) {
  const int64_t n = y_addr.size();
  for (auto* a : {&u_addr, &v_addr, &dst_addr})
    if (a->size() != n) throw std::invalid_argument("yuv420_to_rgb: one address per frame and plane is needed");
  for (auto* a : {&y_pitch, &c_pitch, &heights, &widths, &full_range, &bit_depth})
    if (a->size() != n) throw std::invalid_argument("yuv420_to_rgb: one value per frame is needed");
  for (int64_t k = 0; k < n; ++k)
    if (bit_depth.data()[k] < 8 || bit_depth.data()[k] > 16)
      throw std::invalid_argument("yuv420_to_rgb: samples of 8 to 16 bits are converted");
  std::vector<int64_t> row_start(n + 1, 0);
  for (int64_t k = 0; k < n; ++k) row_start[k + 1] = row_start[k] + heights.data()[k];
  const uint64_t *ya = y_addr.data(), *ua = u_addr.data(), *va = v_addr.data(), *da = dst_addr.data();
  const int64_t *yp = y_pitch.data(), *cp = c_pitch.data(), *hs = heights.data(), *ws = widths.data(),
                *fr = full_range.data(), *bd = bit_depth.data();
  pool.parallel_for(row_start[n], [&](int64_t row) {
    const int64_t k = std::upper_bound(row_start.begin(), row_start.end(), row) - row_start.begin() - 1;
    const int64_t y = row - row_start[k], w = ws[k], cw = (w + 1) / 2, ch = (hs[k] + 1) / 2;
    thread_local std::vector<float> cb_row, cr_row;
    cb_row.resize(cw);
    cr_row.resize(cw);
    // the chroma row at this luma row (vertical interpolation once per chroma sample) ...
    const Tap v = tap(y, ch);
    const float scale = bd[k] == 8 ? 0.f : std::ldexp(1.f, int(8 - bd[k]));
    const uint8_t *cb = reinterpret_cast<const uint8_t*>(ua[k]), *cr = reinterpret_cast<const uint8_t*>(va[k]);
    for (int64_t c = 0; c < cw; ++c) {
      const float b0 = level(cb + v.first * cp[k], c, scale), b1 = level(cb + v.second * cp[k], c, scale);
      const float r0 = level(cr + v.first * cp[k], c, scale), r1 = level(cr + v.second * cp[k], c, scale);
      cb_row[c] = b0 + (b1 - b0) * v.weight - 128.f;
      cr_row[c] = r0 + (r1 - r0) * v.weight - 128.f;
    }
    // ... then horizontally per pixel, with the taps of this width worked out once per thread
    thread_local std::vector<Tap> taps;
    thread_local int64_t taps_width = -1;
    if (taps_width != w) {
      taps.resize(w);
      for (int64_t x = 0; x < w; ++x) taps[x] = tap(x, cw);
      taps_width = w;
    }
    const uint8_t* luma = reinterpret_cast<const uint8_t*>(ya[k]) + y * yp[k];
    uint8_t* out = reinterpret_cast<uint8_t*>(da[k]) + y * w * 3;
    const bool full = fr[k] != 0;
    const float ys = full ? 1.f : 1.164383f, yo = full ? 0.f : 16.f, rv = full ? 1.402f : 1.596027f,
                gu = full ? 0.344136f : 0.391762f, gv = full ? 0.714136f : 0.812968f, bu = full ? 1.772f : 2.017232f;
    for (int64_t x = 0; x < w; ++x) {
      const Tap& h = taps[x];
      const float u = cb_row[h.first] + (cb_row[h.second] - cb_row[h.first]) * h.weight;
      const float vv = cr_row[h.first] + (cr_row[h.second] - cr_row[h.first]) * h.weight;
      const float l = ys * (level(luma, x, scale) - yo);
      out[x * 3] = to_u8(l + rv * vv);
      out[x * 3 + 1] = to_u8(l - gu * u - gv * vv);
      out[x * 3 + 2] = to_u8(l + bu * u);
    }
  });
}

}  // namespace penstock
