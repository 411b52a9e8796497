// Per-channel statistics and point operations on uint8 images (channels last), for the
// automatic augmentations: channel histograms (equalize, auto-contrast, contrast take their
// parameters from them), a 256-entry lookup table per sample and channel (every point
// operation), and sharpness (blend with a 3x3 smoothed image, borders kept).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/point_ops.h"

namespace penstock {
namespace {

using U8Array = ArrayOf<uint8_t>;
using F32Array = ArrayOf<float>;

int64_t channels_of(const BatchView& b, int64_t i) { return b.ndim >= 3 ? b.shape(i)[b.ndim - 1] : 1; }

void check_u8(const Array& a, const char* what) {
  if (!a.holds<uint8_t>())
    throw std::invalid_argument(std::string(what) + ": images must be uint8");
}

}  // namespace

// hist[i, c * 256 + v] = number of pixels of sample i whose channel c has value v.
void channel_histograms(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, int64_t max_channels,
                        I64Array hist) {
  check_u8(src, "channel_histograms");
  BatchView in = make_batch_view(src, shapes, offsets, false);
  if (hist.ndim() != 2 || hist.shape(0) != in.num_samples || hist.shape(1) != max_channels * 256)
    throw std::invalid_argument("channel_histograms: hist must be [N, max_channels * 256]");
  int64_t* h = hist.mutable_data();
  for (int64_t i = 0; i < in.num_samples; ++i)
    if (channels_of(in, i) > max_channels) throw SampleError(i, "channel_histograms: too many channels");
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const int64_t c = channels_of(in, i);
    int64_t* hi = h + i * max_channels * 256;
    std::fill(hi, hi + max_channels * 256, 0);
    const uint8_t* s = in.sample<uint8_t>(i);
    const int64_t pixels = c ? in.volume(i) / c : 0;
    for (int64_t p = 0; p < pixels; ++p, s += c)
      for (int64_t k = 0; k < c; ++k) ++hi[k * 256 + s[k]];
  });
}

// The arithmetic of PIL's ImageOps (as the automatic augmentations use them): posterize keeps the
// round(param) high bits (0-8), solarize inverts values at or above param, solarize_add adds param to
// values below 128 (rounded half up, saturated), invert is 255 - v. A NaN parameter clips to 0.
U8Array parameter_luts(const std::string& kind, ArrayOf<double> params, int64_t channels) {
  enum Kind { kPosterize, kSolarize, kSolarizeAdd, kInvert } k;
  if (kind == "posterize") k = kPosterize;
  else if (kind == "solarize") k = kSolarize;
  else if (kind == "solarize_add") k = kSolarizeAdd;
  else if (kind == "invert") k = kInvert;
  else throw std::invalid_argument("parameter_luts: unknown kind '" + kind + "'");
  if (params.ndim() != 1 || channels < 1)
    throw std::invalid_argument("parameter_luts: params must be [N] and channels positive");
  const int64_t n = params.shape(0);
  auto luts = U8Array::empty({n, channels, 256});
  uint8_t* out = luts.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    const double p = params.data()[i];
    uint8_t* row = out + i * channels * 256;
    for (int v = 0; v < 256; ++v) {
      int value = v;
      if (k == kPosterize) {
        const int bits = int(std::fmin(std::fmax(std::nearbyint(p), 0.0), 8.0));  // round half to even
        value = v & ((0xFF << (8 - bits)) & 0xFF);
      } else if (k == kSolarize) {
        value = double(v) < p ? v : 255 - v;
      } else if (k == kSolarizeAdd) {
        value = v < 128 ? int(std::floor(std::fmin(std::fmax(v + p, 0.0), 255.0) + 0.5)) : v;
      } else {
        value = 255 - v;
      }
      row[v] = uint8_t(value);
    }
    for (int64_t c = 1; c < channels; ++c) std::memcpy(row + c * 256, row, 256);
  }
  return luts;
}

// out[p, c] = luts[i, c, in[p, c]]
void apply_lut(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, U8Array luts, Array dst,
               I64Array dst_offsets) {
  check_u8(src, "apply_lut");
  BatchView in = make_batch_view(src, shapes, offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  if (luts.ndim() != 3 || luts.shape(0) != in.num_samples || luts.shape(2) != 256)
    throw std::invalid_argument("apply_lut: luts must be [N, max_channels, 256]");
  const int64_t max_c = luts.shape(1);
  const uint8_t* l = luts.data();
  for (int64_t i = 0; i < in.num_samples; ++i)
    if (channels_of(in, i) > max_c) throw SampleError(i, "apply_lut: too many channels");
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const int64_t c = channels_of(in, i);
    const uint8_t* li = l + i * max_c * 256;
    const uint8_t* s = in.sample<uint8_t>(i);
    uint8_t* d = out.sample<uint8_t>(i);
    const int64_t pixels = c ? in.volume(i) / c : 0;
    if (c == 3) {
      for (int64_t p = 0; p < pixels; ++p, s += 3, d += 3) {
        d[0] = li[s[0]];
        d[1] = li[256 + s[1]];
        d[2] = li[512 + s[2]];
      }
      return;
    }
    for (int64_t p = 0; p < pixels; ++p, s += c, d += c)
      for (int64_t k = 0; k < c; ++k) d[k] = li[k * 256 + s[k]];
  });
}

// PIL's ImageEnhance.Sharpness: degenerate = 3x3 smooth ([1 1 1; 1 5 1; 1 1 1] / 13, rounded)
// inside, the image itself on the border; out = degenerate + factor * (image - degenerate).
void sharpness(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, F32Array factors, Array dst,
               I64Array dst_offsets) {
  check_u8(src, "sharpness");
  BatchView in = make_batch_view(src, shapes, offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  if (in.ndim != 3) throw std::invalid_argument("sharpness: images must be HWC");
  if (factors.ndim() != 1 || factors.shape(0) != in.num_samples)
    throw std::invalid_argument("sharpness: one factor per sample");
  const float* f = factors.data();
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const int64_t h = in.shape(i)[0], w = in.shape(i)[1], c = in.shape(i)[2];
    const uint8_t* s = in.sample<uint8_t>(i);
    uint8_t* d = out.sample<uint8_t>(i);
    const float k = f[i];
    const int64_t row = w * c;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t at = y * row + x * c + ch;
          const int v = s[at];
          int degenerate = v;
          if (y > 0 && y + 1 < h && x > 0 && x + 1 < w) {
            int sum = 4 * v;
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) sum += s[at + dy * row + dx * c];
            degenerate = (sum + 6) / 13;
          }
          const float r = degenerate + k * float(v - degenerate);
          d[at] = uint8_t(std::clamp(std::floor(r + 0.5f), 0.0f, 255.0f));
        }
      }
    }
  });
}

}  // namespace penstock
