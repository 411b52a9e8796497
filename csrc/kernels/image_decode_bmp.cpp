// Windows BMP, uncompressed: 1/4/8-bit palette (a grey-ramp palette decodes as one channel,
// as PIL reads it), 16-bit (5-5-5 or bit fields), 24-bit, 32-bit (BGRX, or bit fields with an
// optional alpha mask). Bottom-up and top-down rows. RLE / embedded JPEG or PNG go to the
// Python fallback. Every size is checked against the file before reading.
#include <cstring>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {
namespace {

inline uint32_t le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
inline uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

enum Compression : uint32_t { kRaw = 0, kRle8 = 1, kRle4 = 2, kBitFields = 3, kJpeg = 4, kPng = 5,
                              kAlphaBitFields = 6 };

// One channel of a bit-field pixel, scaled to 8 bits (truncating, like PIL's 5/6-bit unpacking).
struct Field {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;
  static Field of(uint32_t mask) {
    Field f;
    f.mask = mask;
    if (!mask) return f;
    while (!((mask >> f.shift) & 1)) ++f.shift;
    f.max = mask >> f.shift;
    return f;
  }
  bool contiguous() const { return max && !(max & (max + 1)); }
  uint8_t get(uint32_t pixel) const { return uint8_t(uint64_t((pixel & mask) >> shift) * 255 / max); }
};

struct Bmp {
  int64_t width = 0, height = 0;
  bool top_down = false, bit_fields = false;
  int bpp = 0;
  uint64_t pixel_offset = 0, stride = 0;
  Field fields[4];  // r, g, b, a
  uint8_t palette[256][3] = {};
  Model model = Model::RGB;
};

Bmp parse(const uint8_t* d, size_t n) {
  if (n < 26) throw DecodeError("truncated BMP header");
  Bmp b;
  b.pixel_offset = le32(d + 10);
  uint32_t header_size = le32(d + 14);
  uint32_t compression = kRaw, colors = 0;
  size_t palette_entry = 4;
  if (header_size == 12) {  // BITMAPCOREHEADER
    b.width = le16(d + 18);
    b.height = le16(d + 20);
    b.bpp = le16(d + 24);
    palette_entry = 3;
  } else if (header_size == 40 || header_size == 52 || header_size == 56 || header_size == 108 ||
             header_size == 124) {
    if (n < 14 + size_t(header_size)) throw DecodeError("truncated BMP header");
    b.width = int32_t(le32(d + 18));
    int32_t h = int32_t(le32(d + 22));
    b.top_down = h < 0;
    b.height = b.top_down ? -int64_t(h) : h;
    b.bpp = le16(d + 28);
    compression = le32(d + 30);
    colors = le32(d + 46);
  } else if (header_size == 64) {
    throw NeedsFallback("OS/2 BMP");
  } else {
    throw DecodeError("invalid BMP header size " + std::to_string(header_size));
  }
  if (b.width < 1 || b.height < 1) throw DecodeError("invalid BMP dimensions");

  if (compression == kRle8 || compression == kRle4 || compression == kJpeg || compression == kPng)
    throw NeedsFallback("compressed BMP");
  b.bit_fields = compression == kBitFields || compression == kAlphaBitFields;
  if (compression != kRaw && !b.bit_fields)
    throw DecodeError("unknown BMP compression " + std::to_string(compression));
  if (b.bit_fields) {
    // Masks follow the 40-byte header or are part of a longer one: offset 54 either way.
    bool has_alpha = compression == kAlphaBitFields || header_size >= 56;
    size_t mask_end = 54 + (has_alpha ? 16 : 12);
    if (n < mask_end || (b.bpp != 16 && b.bpp != 32))
      throw DecodeError("invalid BMP bit fields");
    for (int k = 0; k < (has_alpha ? 4 : 3); ++k) b.fields[k] = Field::of(le32(d + 54 + 4 * k));
    for (int k = 0; k < 3; ++k)
      if (!b.fields[k].contiguous()) throw DecodeError("unsupported BMP bit-field masks");
    if (b.fields[3].mask && !b.fields[3].contiguous()) throw DecodeError("unsupported BMP alpha mask");
    if (b.fields[3].mask) b.model = Model::RGBA;
  } else if (b.bpp == 16) {  // 5-5-5
    b.fields[0] = Field::of(0x7C00), b.fields[1] = Field::of(0x3E0), b.fields[2] = Field::of(0x1F);
  } else if (b.bpp != 1 && b.bpp != 4 && b.bpp != 8 && b.bpp != 24 && b.bpp != 32) {
    throw DecodeError("unsupported BMP bit depth " + std::to_string(b.bpp));
  }

  b.stride = (uint64_t(b.bpp) * uint64_t(b.width) + 31) / 32 * 4;
  if (b.pixel_offset > n || b.stride > (n - b.pixel_offset) / uint64_t(b.height))
    throw DecodeError("truncated BMP pixel data");

  if (b.bpp <= 8) {
    uint32_t max_colors = 1u << b.bpp;
    uint32_t count = colors ? colors : max_colors;
    if (count > max_colors) count = max_colors;
    size_t start = 14 + size_t(header_size);
    if (start + size_t(count) * palette_entry > n) throw DecodeError("truncated BMP palette");
    bool gray = true;
    for (uint32_t k = 0; k < count; ++k) {
      const uint8_t* e = d + start + k * palette_entry;  // B, G, R
      b.palette[k][0] = e[2], b.palette[k][1] = e[1], b.palette[k][2] = e[0];
      uint8_t ramp = count == 2 ? uint8_t(k * 255) : uint8_t(k);  // PIL's grey-palette test
      gray = gray && e[0] == ramp && e[1] == ramp && e[2] == ramp;
    }
    b.model = gray ? Model::Gray : Model::RGB;
  }
  return b;
}

// Writes pixels [x0, x0 + w) of one file row.
void decode_row(const Bmp& b, const uint8_t* row, int64_t x0, int64_t w, uint8_t* out) {
  if (b.bpp <= 8) {
    int bits = b.bpp;
    uint32_t idx_mask = (1u << bits) - 1;
    bool gray = b.model == Model::Gray;
    for (int64_t x = x0; x < x0 + w; ++x) {
      int64_t bit = x * bits;
      uint32_t idx = (row[bit >> 3] >> (8 - bits - (bit & 7))) & idx_mask;
      if (gray) {
        *out++ = b.palette[idx][0];
      } else {
        std::memcpy(out, b.palette[idx], 3);
        out += 3;
      }
    }
  } else if (b.bpp == 24 || (b.bpp == 32 && !b.bit_fields)) {
    int step = b.bpp / 8;
    for (const uint8_t* s = row + x0 * step; w > 0; --w, s += step, out += 3)
      out[0] = s[2], out[1] = s[1], out[2] = s[0];
  } else {
    int step = b.bpp / 8, channels = b.model == Model::RGBA ? 4 : 3;
    for (const uint8_t* s = row + x0 * step; w > 0; --w, s += step, out += channels) {
      uint32_t pixel = step == 2 ? le16(s) : le32(s);
      for (int k = 0; k < channels; ++k) out[k] = b.fields[k].get(pixel);
    }
  }
}

}  // namespace

ImageInfo read_bmp_info(const uint8_t* data, size_t size) {
  Bmp b = parse(data, size);
  ImageInfo info;
  info.height = b.height;
  info.width = b.width;
  info.model = b.model;
  return info;
}

void decode_bmp(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst) {
  Bmp b = parse(data, size);
  const Window& w = req.region;
  if (req.model != b.model || w.y < 0 || w.x < 0 || w.h < 1 || w.w < 1 ||
      w.y + w.h > b.height || w.x + w.w > b.width)
    throw DecodeError("BMP region outside the image");
  int64_t out_row = w.w * model_channels(b.model);
  for (int64_t r = 0; r < w.h; ++r) {
    int64_t y = w.y + r, file_row = b.top_down ? y : b.height - 1 - y;
    decode_row(b, data + b.pixel_offset + file_row * b.stride, w.x, w.w, dst + r * out_row);
  }
}

}  // namespace image
}  // namespace penstock
