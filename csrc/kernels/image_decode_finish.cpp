// After a format decoder: EXIF orientation (flips / transposition) and output colour type
// (RGB, BGR, GRAY = BT.601 luma, YCbCr = BT.601 limited range, ANY_DATA = as stored) in one pass.
#include <type_traits>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {

Orientation orientation_from_exif(int exif) {
  switch (exif) {
    case 2: return {false, false, true};  // mirror left-right
    case 3: return {false, true, true};   // rotate 180
    case 4: return {false, true, false};  // mirror top-bottom
    case 5: return {true, false, false};  // transpose
    case 6: return {true, true, false};   // rotate 90 clockwise
    case 7: return {true, true, true};    // transverse
    case 8: return {true, false, true};   // rotate 90 counter-clockwise
    default: return {};
  }
}

Window display_to_stored(const Window& d, int64_t stored_h, int64_t stored_w, Orientation o) {
  // Stored rows come from display rows (or columns when transposed), and vice versa.
  int64_t a0 = o.transpose ? d.x : d.y, na = o.transpose ? d.w : d.h;
  int64_t b0 = o.transpose ? d.y : d.x, nb = o.transpose ? d.h : d.w;
  if (o.flip_rows) a0 = stored_h - (a0 + na);
  if (o.flip_cols) b0 = stored_w - (b0 + nb);
  return {a0, b0, na, nb};
}

int output_channels(int output_type, Model stored) {
  switch (output_type) {
    case kAnyData: return model_channels(stored);
    case kGray: return 1;
    default: return 3;
  }
}

bool model_is_output(Model m, int output_type) {
  switch (output_type) {
    case kAnyData: return m != Model::BGR;
    case kRGB: return m == Model::RGB;
    case kBGR: return m == Model::BGR;
    case kGray: return m == Model::Gray;
    default: return false;
  }
}

namespace {

template <Model M>
constexpr int kChannels = M == Model::Gray ? 1 : M == Model::GrayAlpha ? 2 : M == Model::RGBA ? 4 : 3;

template <Model M>
inline void read_rgb(const uint8_t* s, int& r, int& g, int& b) {
  if constexpr (M == Model::Gray || M == Model::GrayAlpha) {
    r = g = b = s[0];
  } else if constexpr (M == Model::BGR) {
    r = s[2], g = s[1], b = s[0];
  } else {
    r = s[0], g = s[1], b = s[2];
  }
}

// YCbCr coefficients (BT.601 on 0..255, divided by 255) in 20-bit fixed point: within 1e-3
// of the exact value, and integer arithmetic vectorizes.
constexpr int kShift = 20;
constexpr int32_t fixed(double v) { return int32_t(v * (1 << kShift) + (v < 0 ? -0.5 : 0.5)); }
constexpr int32_t kY[3] = {fixed(65.481 / 255), fixed(128.553 / 255), fixed(24.966 / 255)};
constexpr int32_t kCb[3] = {fixed(-37.797 / 255), fixed(-74.203 / 255), fixed(112.0 / 255)};
constexpr int32_t kCr[3] = {fixed(112.0 / 255), fixed(-93.786 / 255), fixed(-18.214 / 255)};

template <Model M, int OT>
inline void convert_pixel(const uint8_t* s, uint8_t* d) {
  if constexpr (OT == kAnyData) {
    for (int k = 0; k < kChannels<M>; ++k) d[k] = s[k];
  } else if constexpr (OT == kGray && (M == Model::Gray || M == Model::GrayAlpha)) {
    d[0] = s[0];
  } else {
    int r, g, b;
    read_rgb<M>(s, r, g, b);
    if constexpr (OT == kRGB) {
      d[0] = r, d[1] = g, d[2] = b;
    } else if constexpr (OT == kBGR) {
      d[0] = b, d[1] = g, d[2] = r;
    } else if constexpr (OT == kGray) {
      // 0.299, 0.587, 0.114 in 16-bit fixed point (they sum to exactly 65536), rounded.
      d[0] = uint8_t((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
    } else {  // YCbCr, ITU-R BT.601 limited range; results lie in [16, 240], so no clamping
      d[0] = uint8_t((kY[0] * r + kY[1] * g + kY[2] * b + fixed(16.5)) >> kShift);
      d[1] = uint8_t((kCb[0] * r + kCb[1] * g + kCb[2] * b + fixed(128.5)) >> kShift);
      d[2] = uint8_t((kCr[0] * r + kCr[1] * g + kCr[2] * b + fixed(128.5)) >> kShift);
    }
  }
}

template <Model M, int OT>
void finish_typed(const uint8_t* src, int64_t h, int64_t w, Orientation o, uint8_t* dst) {
  constexpr int SC = kChannels<M>;
  constexpr int DC = OT == kAnyData ? SC : OT == kGray ? 1 : 3;
  int64_t out_h = o.transpose ? w : h, out_w = o.transpose ? h : w;
  int64_t row_stride = w * SC;
  for (int64_t r = 0; r < out_h; ++r) {
    // Stored pixel (a, b) shown at display (r, 0), and its step per display column.
    int64_t a = o.transpose ? 0 : r, b = o.transpose ? r : 0;
    int64_t da = o.transpose ? 1 : 0, db = o.transpose ? 0 : 1;
    if (o.flip_rows) a = h - 1 - a, da = -da;
    if (o.flip_cols) b = w - 1 - b, db = -db;
    const uint8_t* s = src + a * row_stride + b * SC;
    int64_t step = da * row_stride + db * SC;
    uint8_t* d = dst + r * out_w * DC;
    if (step == SC) {  // a stored row read forwards: constant stride, so it vectorizes
      for (int64_t c = 0; c < out_w; ++c) convert_pixel<M, OT>(s + c * SC, d + c * DC);
    } else {
      for (int64_t c = 0; c < out_w; ++c) convert_pixel<M, OT>(s + c * step, d + c * DC);
    }
  }
}

template <Model M>
void finish_model(const uint8_t* src, int64_t h, int64_t w, Orientation o, int ot, uint8_t* dst) {
  switch (ot) {
    case kRGB: return finish_typed<M, kRGB>(src, h, w, o, dst);
    case kBGR: return finish_typed<M, kBGR>(src, h, w, o, dst);
    case kGray: return finish_typed<M, kGray>(src, h, w, o, dst);
    case kYCbCr: return finish_typed<M, kYCbCr>(src, h, w, o, dst);
    case kAnyData: return finish_typed<M, kAnyData>(src, h, w, o, dst);
    default: throw std::invalid_argument("unknown output_type " + std::to_string(ot));
  }
}

}  // namespace

void finish_pixels(const uint8_t* src, int64_t h, int64_t w, Model model, Orientation o,
                   int output_type, uint8_t* dst) {
  switch (model) {
    case Model::Gray: return finish_model<Model::Gray>(src, h, w, o, output_type, dst);
    case Model::GrayAlpha: return finish_model<Model::GrayAlpha>(src, h, w, o, output_type, dst);
    case Model::RGB: return finish_model<Model::RGB>(src, h, w, o, output_type, dst);
    case Model::RGBA: return finish_model<Model::RGBA>(src, h, w, o, output_type, dst);
    case Model::BGR: return finish_model<Model::BGR>(src, h, w, o, output_type, dst);
  }
}

}  // namespace image
}  // namespace penstock
