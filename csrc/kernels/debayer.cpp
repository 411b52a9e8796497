// Demosaicing of Bayer images (uint8 or uint16, frames of H x W) as OpenCV's bilinear conversions
// compute it: each inner pixel takes its own colour, the average of its two horizontal or two
// vertical neighbours, or of its four side or four diagonal neighbours, for the others (integer
// averages rounding half up); the grey conversion weighs the same neighbours with BT.601's
// 14-bit fixed-point coefficients. Outer rows and columns repeat their inner neighbours'.
// The blue position (y, x) is that of blue in the 2 x 2 tile starting at row 1, column 1.
#include <algorithm>
#include <cstdint>

#include "engine/dtype.h"
#include "kernels/debayer.h"

namespace penstock {
namespace {

inline int64_t descale(int64_t v, int bits) { return (v + (int64_t(1) << (bits - 1))) >> bits; }

// out: 3 values (RGB) or 1 (grey) for the pixel whose values come from inner pixel (y, x).
template <typename T>
void demosaic_pixel(const T* in, int64_t w, int64_t y, int64_t x, int by, int bx, bool grey, T* out) {
  auto at = [&](int64_t yy, int64_t xx) { return int64_t(in[yy * w + xx]); };
  const bool blue = (y & 1) == ((1 + by) & 1) && (x & 1) == ((1 + bx) & 1);
  const bool red = (y & 1) == (by & 1) && (x & 1) == (bx & 1);
  const bool red_row = (y & 1) == (by & 1);  // a green pixel's horizontal neighbours are red
  const int64_t c = at(y, x);
  const int64_t hor = at(y, x - 1) + at(y, x + 1), ver = at(y - 1, x) + at(y + 1, x);
  const int64_t diag = at(y - 1, x - 1) + at(y - 1, x + 1) + at(y + 1, x - 1) + at(y + 1, x + 1);
  if (grey) {
    constexpr int64_t r2y = 4899, g2y = 9617, b2y = 1868;
    if (blue) out[0] = T(descale(diag * r2y + (hor + ver) * g2y + c * 4 * b2y, 16));
    else if (red) out[0] = T(descale(diag * b2y + (hor + ver) * g2y + c * 4 * r2y, 16));
    else out[0] = T(descale((red_row ? hor : ver) * r2y + (red_row ? ver : hor) * b2y + c * 2 * g2y, 15));
    return;
  }
  const int64_t cross = (hor + ver + 2) >> 2, corners = (diag + 2) >> 2;
  if (blue) {
    out[0] = T(corners), out[1] = T(cross), out[2] = T(c);
  } else if (red) {
    out[0] = T(c), out[1] = T(cross), out[2] = T(corners);
  } else {
    const int64_t h2 = (hor + 1) >> 1, v2 = (ver + 1) >> 1;
    out[0] = T(red_row ? h2 : v2), out[1] = T(c), out[2] = T(red_row ? v2 : h2);
  }
}

}  // namespace

// shapes [N, 3] (frames, H, W); blue [N, 2] (y, x) of blue; the output is (frames, H, W, 3 or 1).
void debayer(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, int type, Array dst,
             I64Array dst_offsets, ArrayOf<int32_t> blue, bool grey) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  const int64_t n = in.num_samples;
  if (in.ndim != 3) throw std::invalid_argument("debayer: samples must be (frames, H, W)");
  if (blue.size() != 2 * n) throw std::invalid_argument("debayer: blue positions must be [N, 2]");
  if (dst_offsets.size() != n) throw std::invalid_argument("debayer: one output offset per sample");
  const int64_t channels = grey ? 1 : 3;
  int64_t dst_size = dst.size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* s = in.shape(i);
    if (s[0] * s[1] * s[2] != 0 && (s[1] < 3 || s[2] < 3))
      throw SampleError(i, "debayer: images must be at least 3 x 3");
    if (blue.at(i, 0) < 0 || blue.at(i, 0) > 1 || blue.at(i, 1) < 0 || blue.at(i, 1) > 1)
      throw SampleError(i, "debayer: the blue position must be (0 or 1, 0 or 1)");
    if (dst_offsets.at(i) < 0 || dst_offsets.at(i) + in.volume(i) * channels > dst_size)
      throw std::invalid_argument("debayer: output offsets out of range");
  }
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* out_base = static_cast<T*>(dst.mutable_data());
    pool.parallel_for(n, [&](int64_t i) {
      const int64_t frames = in.shape(i)[0], h = in.shape(i)[1], w = in.shape(i)[2];
      for (int64_t f = 0; f < frames; ++f) {
        const T* plane = in.sample<T>(i) + f * h * w;
        T* out = out_base + dst_offsets.at(i) + f * h * w * channels;
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x)
            demosaic_pixel(plane, w, std::min(std::max<int64_t>(y, 1), h - 2), std::min(std::max<int64_t>(x, 1), w - 2),
                           blue.at(i, 0), blue.at(i, 1), grey, out + (y * w + x) * channels);
      }
    });
  };
  if (type == int(DType::UINT8)) run(static_cast<uint8_t*>(nullptr));
  else if (type == int(DType::UINT16)) run(static_cast<uint16_t*>(nullptr));
  else throw std::invalid_argument("debayer: supported types are UINT8 and UINT16, got " + dtype_name(type));
}

}  // namespace penstock
