// CLAHE (contrast limited adaptive histogram equalization) of uint8 HWC images, OpenCV's algorithm:
// the image (padded reflect-101, see clahe_plane) is cut into tiles_y x tiles_x tiles; each tile's
// histogram is clipped at max(int(clip_limit * tile_area / 256), 1), the clipped counts spread
// evenly (the remainder one by one at a stride), and its cumulative sum scaled to [0, 255] is the
// tile's table; each pixel blends the tables of the four nearest tile centres bilinearly.
//
// One channel, or each channel of RGB (luma_only=false), is equalized as it is; with luma_only,
// RGB becomes 8-bit CIE Lab (L scaled to 0..255, a and b offset by 128), L is equalized, and Lab
// goes back to RGB. RGB -> Lab is the fixed-point arithmetic of OpenCV's 8-bit conversion (sRGB
// gamma and cube-root tables, 12- and 15-bit fixed point), whose L is what OpenCV's CLAHE users
// equalize; Lab -> RGB is in float. The GPU kernels (csrc/cuda/clahe.cu) take the same tables.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/clahe.h"
#include "kernels/separable.h"

namespace penstock {
namespace {

using I32Array = ArrayOf<int32_t>;

constexpr int kCbrtTableSize = 3072;

inline double srgb_to_linear_d(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }
inline float linear_to_srgb(float v) {
  v = std::min(std::max(v, 0.f), 1.f);
  return v <= 0.0031308f ? v * 12.92f : 1.055f * std::pow(v, 1.f / 2.4f) - 0.055f;
}
inline float lab_f_inverse(float t) { return t > 0.206893f ? t * t * t : (t - 16.f / 116.f) / 7.787f; }
inline uint8_t to_u8(float v) { return uint8_t(std::min(std::max(std::nearbyint(v), 0.f), 255.f)); }

// The fixed-point RGB -> Lab tables: sRGB gamma (x8), the Lab cube-root function (x2^15) over
// [0, 1.5] in steps of 1 / (255 * 8), and the D65-normalized RGB -> XYZ matrix (x2^12).
struct LabTables {
  int32_t gamma[256];
  int32_t cbrt[kCbrtTableSize];
  int32_t coeffs[9];
  LabTables() {
    for (int i = 0; i < 256; ++i)
      gamma[i] = int32_t(std::nearbyint(255.0 * 8 * srgb_to_linear_d(i / 255.0)));
    for (int i = 0; i < kCbrtTableSize; ++i) {
      double x = i / (255.0 * 8);
      cbrt[i] = int32_t(std::nearbyint(32768.0 * (x < 0.008856 ? x * 7.787 + 16.0 / 116.0 : std::cbrt(x))));
    }
    const double m[9] = {0.412453, 0.357580, 0.180423, 0.212671, 0.715160, 0.072169, 0.019334, 0.119193, 0.950227};
    const double white[3] = {0.950456, 1.0, 1.088754};
    for (int k = 0; k < 9; ++k) coeffs[k] = int32_t(std::nearbyint(4096.0 * m[k] / white[k / 3]));
  }
};

const LabTables& lab_tables() {
  static const LabTables tables;
  return tables;
}

inline int32_t descale(int64_t v, int bits) { return int32_t((v + (int64_t(1) << (bits - 1))) >> bits); }
inline uint8_t clamp_u8(int32_t v) { return uint8_t(std::min(std::max(v, 0), 255)); }

// RGB -> 8-bit Lab (L * 255 / 100, a + 128, b + 128), D65 white.
inline void rgb_to_lab8(const LabTables& t, const uint8_t* rgb, uint8_t* lab) {
  const int64_t r = t.gamma[rgb[0]], g = t.gamma[rgb[1]], b = t.gamma[rgb[2]];
  const int64_t fx = t.cbrt[descale(r * t.coeffs[0] + g * t.coeffs[1] + b * t.coeffs[2], 12)];
  const int64_t fy = t.cbrt[descale(r * t.coeffs[3] + g * t.coeffs[4] + b * t.coeffs[5], 12)];
  const int64_t fz = t.cbrt[descale(r * t.coeffs[6] + g * t.coeffs[7] + b * t.coeffs[8], 12)];
  lab[0] = clamp_u8(descale(296 * fy - 1336934, 15));  // L * 255 / 100 = 116 * 255 / 100 * fy - 16 * 255 / 100
  lab[1] = clamp_u8(descale(500 * (fx - fy) + (int64_t(128) << 15), 15));
  lab[2] = clamp_u8(descale(200 * (fy - fz) + (int64_t(128) << 15), 15));
}

inline void lab8_to_rgb(const uint8_t* lab, uint8_t* rgb) {
  float l = lab[0] * 100.f / 255.f, a = lab[1] - 128.f, bb = lab[2] - 128.f;
  float y = l <= 8.f ? l / 903.3f : std::pow((l + 16.f) / 116.f, 3.f);
  float fy = y <= 0.008856f ? 7.787f * y + 16.f / 116.f : (l + 16.f) / 116.f;
  float x = lab_f_inverse(a / 500.f + fy) * 0.950456f, z = lab_f_inverse(fy - bb / 200.f) * 1.088754f;
  float r = 3.240479f * x - 1.537150f * y - 0.498535f * z;
  float g = -0.969256f * x + 1.875992f * y + 0.041556f * z;
  float b = 0.055648f * x - 0.204043f * y + 1.057311f * z;
  rgb[0] = to_u8(linear_to_srgb(r) * 255.f);
  rgb[1] = to_u8(linear_to_srgb(g) * 255.f);
  rgb[2] = to_u8(linear_to_srgb(b) * 255.f);
}

// Equalizes one plane (h x w, values at stride `step`) in place.
void clahe_plane(uint8_t* plane, int64_t h, int64_t w, int64_t step, int tiles_x, int tiles_y, float clip_limit) {
  // OpenCV pads (reflect 101) by tiles - extent % tiles along both axes unless both divide evenly
  const bool whole = h % tiles_y == 0 && w % tiles_x == 0;
  const int64_t th = h / tiles_y + !whole, tw = w / tiles_x + !whole;
  const int64_t area = th * tw;
  int64_t clip = 0;
  if (clip_limit > 0) clip = std::max<int64_t>(int64_t(double(clip_limit) * double(area) / 256.0), 1);
  const float scale = 255.f / float(area);
  std::vector<uint8_t> luts(int64_t(tiles_x) * tiles_y * 256);
  std::vector<int64_t> hist(256);
  for (int ty = 0; ty < tiles_y; ++ty)
    for (int tx = 0; tx < tiles_x; ++tx) {
      std::fill(hist.begin(), hist.end(), 0);
      for (int64_t y = ty * th; y < (ty + 1) * th; ++y) {
        const uint8_t* row = plane + reflect101(y, h) * w * step;
        for (int64_t x = tx * tw; x < (tx + 1) * tw; ++x) ++hist[row[reflect101(x, w) * step]];
      }
      if (clip > 0) {
        int64_t clipped = 0;
        for (auto& v : hist)
          if (v > clip) {
            clipped += v - clip;
            v = clip;
          }
        int64_t batch = clipped / 256, residual = clipped - batch * 256;
        for (auto& v : hist) v += batch;
        if (residual) {
          int64_t stride = std::max<int64_t>(256 / residual, 1);
          for (int64_t i = 0; i < 256 && residual > 0; i += stride, --residual) ++hist[i];
        }
      }
      uint8_t* lut = luts.data() + (int64_t(ty) * tiles_x + tx) * 256;
      int64_t sum = 0;
      for (int i = 0; i < 256; ++i) {
        sum += hist[i];
        lut[i] = to_u8(float(sum) * scale);
      }
    }
  const float inv_tw = 1.f / float(tw), inv_th = 1.f / float(th);
  for (int64_t y = 0; y < h; ++y) {
    float tyf = float(y) * inv_th - 0.5f;
    int64_t ty1 = int64_t(std::floor(tyf));
    float ya = tyf - float(ty1);
    int64_t ty2 = std::min<int64_t>(ty1 + 1, tiles_y - 1);
    ty1 = std::max<int64_t>(ty1, 0);
    const uint8_t* lut_top = luts.data() + ty1 * tiles_x * 256;
    const uint8_t* lut_bottom = luts.data() + ty2 * tiles_x * 256;
    uint8_t* row = plane + y * w * step;
    for (int64_t x = 0; x < w; ++x) {
      float txf = float(x) * inv_tw - 0.5f;
      int64_t tx1 = int64_t(std::floor(txf));
      float xa = txf - float(tx1);
      int64_t tx2 = std::min<int64_t>(tx1 + 1, tiles_x - 1);
      tx1 = std::max<int64_t>(tx1, 0);
      int v = row[x * step];
      float top = lut_top[tx1 * 256 + v] * (1.f - xa) + lut_top[tx2 * 256 + v] * xa;
      float bottom = lut_bottom[tx1 * 256 + v] * (1.f - xa) + lut_bottom[tx2 * 256 + v] * xa;
      row[x * step] = to_u8(top * (1.f - ya) + bottom * ya);
    }
  }
}

// A copy of n table entries as a new array.
ArrayOf<int32_t> table_array(const int32_t* values, int64_t n) {
  auto out = ArrayOf<int32_t>::empty({n});
  std::copy(values, values + n, out.mutable_data());
  return out;
}

}  // namespace

ClaheTables clahe_lab_tables() {
  const LabTables& t = lab_tables();
  return {table_array(t.gamma, 256), table_array(t.cbrt, kCbrtTableSize), table_array(t.coeffs, 9)};
}

// shapes [N, 3] (H, W, C: 1 or 3); per sample tiles (x, y) int32 [N, 2], clip limits [N]; luma: RGB
// through Lab's L, else every channel on its own.
void clahe(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst, I64Array dst_offsets,
           ArrayOf<int32_t> tiles, ArrayOf<float> clip_limits, bool luma) {
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  const int64_t n = in.num_samples;
  if (in.ndim != 3 || in.elem_size != 1) throw std::invalid_argument("clahe: samples must be uint8 HWC");
  if (tiles.size() != 2 * n || clip_limits.size() != n)
    throw std::invalid_argument("clahe: tiles must be [N, 2] and clip limits [N]");
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = in.shape(i)[2];
    if (c != 1 && c != 3) throw SampleError(i, "clahe: images must have 1 or 3 channels, got " + std::to_string(c));
    if (tiles.at(i, 0) < 1 || tiles.at(i, 1) < 1) throw SampleError(i, "clahe: tiles_x and tiles_y must be positive");
  }
  const float* limits = clip_limits.data();
  pool.parallel_for(n, [&](int64_t i) {
    const int64_t h = in.shape(i)[0], w = in.shape(i)[1], c = in.shape(i)[2];
    if (h * w == 0) return;
    const uint8_t* s = in.sample<uint8_t>(i);
    uint8_t* d = out.sample<uint8_t>(i);
    const int tx = tiles.at(i, 0), ty = tiles.at(i, 1);
    if (c == 3 && luma) {
      const LabTables& tables = lab_tables();
      std::vector<uint8_t> lab(h * w * 3);
      for (int64_t p = 0; p < h * w; ++p) rgb_to_lab8(tables, s + p * 3, lab.data() + p * 3);
      clahe_plane(lab.data(), h, w, 3, tx, ty, limits[i]);
      for (int64_t p = 0; p < h * w; ++p) lab8_to_rgb(lab.data() + p * 3, d + p * 3);
      return;
    }
    std::copy(s, s + h * w * c, d);
    for (int64_t ch = 0; ch < c; ++ch) clahe_plane(d + ch, h, w, c, tx, ty, limits[i]);
  });
}

}  // namespace penstock
